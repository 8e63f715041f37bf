#pragma once
// Scrape-time collectors: each reads one source through the configured root paths and appends
// metric families. Collectors never do disk I/O on a monitored device (probes do, in their own
// threads); they read kernel attribute files only, so a scrape cannot hang on a card.
#include <prometheus/metric_family.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sources/device_registry.h"
#include "scrape/exposition.h"

namespace diskprobe {
class ProbeManager;
}

namespace diskprobe::collectors {

// Where the host's pseudo-filesystems are (node_exporter's --path.* flags), so every collector
// runs on a fixture tree recorded from a real machine.
struct Paths {
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string rootfs = "/";
  std::string debugfs = "/sys/kernel/debug";  // mmc_ios: <debugfs>/mmcN/ios (root only)
  // boot_config: the firmware's config.txt; empty = <rootfs>/boot/firmware/config.txt, then
  // <rootfs>/boot/config.txt.
  std::string bootconfig = "";
  std::string kmsg = "/dev/kmsg";  // kmsg: the kernel log, followed from the start of its ring buffer
};

struct ScrapeContext {
  const Paths& paths;
  const DeviceList& devices;           // whole disks selected by the config, sorted by name
  const ProbeManager* probes = nullptr;  // the probe scheduler, when probes run
  std::string discovery_error = {};      // why device discovery failed; "" when it worked
};

using Families = FamilyList;  // exposition.h: references stay valid while appending
using Labels = std::vector<prometheus::ClientMetric::Label>;

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  // Starts what must run between scrapes (the kmsg follower's thread); called once by main
  // before the first scrape. The destructor stops it. Default: nothing.
  virtual void Start(const Paths& /*paths*/) {}
  // Appends this collector's families to *out. Returns false when its source could not be read
  // (diskprobe_collector_success 0); what could be read is still appended. Logs a failure once
  // per change of state, never once per scrape. Must not throw.
  virtual bool Collect(const ScrapeContext& ctx, Families* out) = 0;
  // Like Collect, but may write exposition text instead of families (a family goes to one of
  // the three, never to two): *text is this collector's place in the exposition, before the
  // families it appends to *out; *tail goes at the end of the exposition, after the exporter's
  // own families. Collectors write their families straight into *text (FamilySink) to save
  // building them, or keep text of results that rarely change in *tail. The default calls
  // Collect.
  virtual bool CollectWithText(const ScrapeContext& ctx, Families* out, std::string* /*text*/,
                               std::string* /*tail*/) {
    return Collect(ctx, out);
  }
};

// Where a collector that writes its families one after the other puts them: into Families
// (Collect; what the tests look at) or straight into exposition text (a scrape), from the same
// code, so both give the same exposition.
class FamilySink {
 public:
  virtual ~FamilySink() = default;
  // Starts a family of counters or gauges. It appears only when a sample follows, as
  // WriteExposition leaves out families without samples. name and help must stay valid until
  // the next Family call.
  virtual void Family(std::string_view name, std::string_view help, prometheus::MetricType type) = 0;
  // One sample of the current family.
  virtual void Sample(std::initializer_list<LabelView> labels, double value) = 0;
};

// Appends families to a Families list (each created at its first sample).
class FamiliesSink final : public FamilySink {
 public:
  explicit FamiliesSink(Families* out) : out_(out) {}
  void Family(std::string_view name, std::string_view help, prometheus::MetricType type) override;
  void Sample(std::initializer_list<LabelView> labels, double value) override;

 private:
  Families* out_;
  std::string_view name_, help_;
  prometheus::MetricType type_ = prometheus::MetricType::Untyped;
  prometheus::MetricFamily* current_ = nullptr;
};

// Appends the exposition text of the families (the header at the first sample).
class TextSink final : public FamilySink {
 public:
  explicit TextSink(std::string* out) : out_(out) {}
  void Family(std::string_view name, std::string_view help, prometheus::MetricType type) override;
  void Sample(std::initializer_list<LabelView> labels, double value) override;

 private:
  std::string* out_;
  std::string_view name_, help_;
  prometheus::MetricType type_ = prometheus::MetricType::Untyped;
  bool header_written_ = true;  // no family started yet
};

// A collector known to the command line (--collector.NAME / --no-collector.NAME).
struct CollectorInfo {
  std::string name;
  std::string help;
  bool enabled_by_default;
  std::function<std::unique_ptr<Collector>()> make;
};
// Every collector, in exposition order.
const std::vector<CollectorInfo>& AllCollectors();

// --- helpers for building families -------------------------------------------------------------

// Appends an empty family and returns it. The reference stays valid while more are appended.
prometheus::MetricFamily& AddFamily(Families* out, std::string name, std::string help, prometheus::MetricType type);
// Appends one sample to a counter or gauge family.
void AddSample(prometheus::MetricFamily& family, Labels labels, double value);

// Remembers the last failure reason so that it is logged only when it changes.
class ErrorState {
 public:
  explicit ErrorState(std::string collector) : collector_(std::move(collector)) {}
  // Logs `reason` if it differs from the last one; "" means healthy (logs a recovery once).
  void Set(const std::string& reason);
 private:
  std::string collector_;
  std::string last_;
};

}  // namespace diskprobe::collectors
