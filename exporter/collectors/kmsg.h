#pragma once
// kmsg: kernel log messages that tell a failing card, counted per disk, mmc host and kind by a
// KmsgFollower (sources/kmsg_follower.h) that reads --path.kmsg (/dev/kmsg) in its own thread from the
// start of the ring buffer; the wiring starts it. A scrape copies the counts: no I/O.
// The log unreadable (no CAP_SYSLOG, a missing path) or no follower: no series, the collector
// fails with the reason; the other collectors run on.
// Messages are counted under the disk they name when it is monitored (selected by the device
// filters and present in sysfs) as they are logged, and the series stay after the disk is gone:
// the errors logged as a card dies are the ones to keep. Messages naming any other device, and
// those logged before a disk of the same name appeared again, are counted without the name in
// diskprobe_kernel_messages_unattributed_total{kind,reason} (KmsgCounter in
// sources/kmsg_follower.h): the series are bounded by the disks there are, not by the log.
// Input of which no line is a /dev/kmsg record (dmesg text as --path.kmsg) fails the collector
// with the reason, and only the log's own counters (records, skipped as malformed) are written:
// zeros for the messages would look like a healthy card.
#include <optional>
#include <string>

#include "scrape/collector.h"
#include "sources/kmsg_follower.h"

namespace diskprobe::collectors {

class KmsgCollector : public Collector {
 public:
  // `follower` (started, or failed to start) may be null; it must outlive the collector.
  explicit KmsgCollector(const KmsgFollower* follower) : follower_(follower) {}

  // The text is kept and written again for as long as the counts stay the same.
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  static void Write(const KmsgSnapshot& s, FamilySink& out);
  static void WriteMessages(const KmsgSnapshot& s, FamilySink& out);
  static void WriteLog(const KmsgSnapshot& s, FamilySink& out);
  static bool Unparsable(const KmsgSnapshot& s);

  const KmsgFollower* follower_;
  std::optional<KmsgSnapshot> cached_;  // the counts cached_text_ shows
  std::string cached_text_;
};

}  // namespace diskprobe::collectors
