#pragma once
// kmsg: kernel log messages that tell a failing card, counted per disk, mmc host and kind by a
// KmsgFollower (sources/kmsg_follower.h) that reads --path.kmsg (/dev/kmsg) in its own thread from the
// start of the ring buffer. A scrape copies the counts: no I/O.
// The log unreadable (no CAP_SYSLOG, a missing path): no series, the collector fails, the reason
// is logged once; the other collectors run on.
// Messages are counted under the disk they name whether or not it is monitored now, and the
// series stay after the disk is gone: the errors logged as a card dies are the ones to keep.
#include <memory>
#include <optional>
#include <string>

#include "scrape/collector.h"
#include "sources/kmsg_follower.h"

namespace diskprobe::collectors {

class KmsgCollector : public Collector {
 public:
  KmsgCollector() = default;
  // Tests: a follower that is already running (or failed).
  explicit KmsgCollector(std::shared_ptr<KmsgFollower> follower) : follower_(std::move(follower)) {}

  std::string_view Name() const override { return "kmsg"; }
  // Starts following paths.kmsg, reading sysfs to map names to disks.
  void Start(const Paths& paths) override;
  bool Collect(const ScrapeContext& ctx, Families* out) override;
  // Writes the families as text into *text; the text is kept and written again for as long as
  // the counts stay the same.
  bool CollectWithText(const ScrapeContext& ctx, Families* out, std::string* text, std::string* tail) override;

 private:
  // The follower's counts, or nullopt when it cannot be read (reason logged once).
  std::optional<KmsgSnapshot> TakeSnapshot(const ScrapeContext& ctx);
  static void Write(const KmsgSnapshot& s, FamilySink& out);

  ErrorState errors_{"kmsg"};
  std::shared_ptr<KmsgFollower> follower_;
  std::optional<KmsgSnapshot> cached_;  // the counts cached_text_ shows
  std::string cached_text_;
};

}  // namespace diskprobe::collectors
