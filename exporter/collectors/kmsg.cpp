#include "collectors/kmsg.h"

namespace diskprobe::collectors {

using prometheus::MetricType;

CollectResult KmsgCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  if (follower_ == nullptr) return CollectResult::Failed("the kernel log follower was not started");
  std::vector<std::string> disks;
  disks.reserve(ctx.devices.size());
  for (const Device& d : ctx.devices) disks.push_back(d.name);
  KmsgSnapshot s = follower_->Snapshot(disks);
  if (!s.error.empty()) return CollectResult::Failed(std::move(s.error));
  // The text is a function of the counts alone, which change only when a message is logged.
  if (!cached_ || s.messages != cached_->messages || s.unattributed != cached_->unattributed ||
      s.records != cached_->records || s.lost != cached_->lost || s.malformed != cached_->malformed ||
      s.oversized != cached_->oversized) {
    cached_text_.clear();
    FamilySink cache(&cached_text_);
    Write(s, cache);
    cached_ = std::move(s);
  }
  out.Text(cached_text_);
  // Lines came but none was a record: the input is not /dev/kmsg's format (`dmesg` text given as
  // --path.kmsg, say). Zero counts would look healthy; the message is fixed so it is logged once.
  if (Unparsable(*cached_))
    return CollectResult::Failed(follower_->path() +
                                 ": no line read is a /dev/kmsg record (\"prio,seq,usec,flags;text\"); "
                                 "messages cannot be counted (dmesg text? use /dev/kmsg or a dump of it)");
  return CollectResult::Ok();
}

bool KmsgCollector::Unparsable(const KmsgSnapshot& s) { return s.records == 0 && s.malformed > 0; }

void KmsgCollector::Write(const KmsgSnapshot& s, FamilySink& out) {
  if (!Unparsable(s)) WriteMessages(s, out);
  WriteLog(s, out);
}

void KmsgCollector::WriteMessages(const KmsgSnapshot& s, FamilySink& out) {
  out.Family("diskprobe_kernel_messages_total",
             "Kernel log messages that tell a failing card, by whole disk, mmc host and kind "
             "(rate-limited ones included); device and host empty when the message names neither.",
             MetricType::Counter);
  for (const auto& [k, v] : s.messages)
    out.Sample({{"device", std::get<0>(k)}, {"host", std::get<1>(k)}, {"kind", parsers::ToString(std::get<2>(k))}},
               static_cast<double>(v));
  out.Family("diskprobe_kernel_messages_unattributed_total",
             "Kernel log messages (the kinds of diskprobe_kernel_messages_total) that name a device without series: "
             "not monitored, logged before a new device of that name appeared, beyond the device limit, or "
             "naming a controller with several disks (reason).",
             MetricType::Counter);
  for (const auto& [k, v] : s.unattributed)
    out.Sample({{"kind", parsers::ToString(k.second)}, {"reason", ToString(k.first)}}, static_cast<double>(v));
}

void KmsgCollector::WriteLog(const KmsgSnapshot& s, FamilySink& out) {
  out.Family("diskprobe_kernel_log_records_total",
             "Records read from the kernel log since the exporter started (from the start of the ring buffer).",
             MetricType::Counter);
  out.Sample({}, static_cast<double>(s.records));
  out.Family("diskprobe_kernel_log_lost_records_total",
             "Kernel log records overwritten in the ring buffer before they were read (sequence gaps).",
             MetricType::Counter);
  out.Sample({}, static_cast<double>(s.lost));
  out.Family("diskprobe_kernel_log_skipped_records_total",
             "Kernel log records not counted: malformed (no \"prio,seq,ts,flags;\" prefix), oversized "
             "(a file or pipe line longer than 8192 bytes, the largest /dev/kmsg record) or duplicate "
             "(a record read again: same sequence number and timestamp).",
             MetricType::Counter);
  out.Sample({{"reason", "malformed"}}, static_cast<double>(s.malformed));
  out.Sample({{"reason", "oversized"}}, static_cast<double>(s.oversized));
  out.Sample({{"reason", "duplicate"}}, static_cast<double>(s.duplicate));
}

}  // namespace diskprobe::collectors
