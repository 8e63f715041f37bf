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
  if (!cached_ || s.messages != cached_->messages || s.records != cached_->records || s.lost != cached_->lost) {
    cached_text_.clear();
    FamilySink cache(&cached_text_);
    Write(s, cache);
    cached_ = std::move(s);
  }
  out.Text(cached_text_);
  return CollectResult::Ok();
}

void KmsgCollector::Write(const KmsgSnapshot& s, FamilySink& out) {
  out.Family("diskprobe_kernel_messages_total",
             "Kernel log messages that tell a failing card, by whole disk, mmc host and kind "
             "(rate-limited ones included); device and host empty when the message names neither.",
             MetricType::Counter);
  for (const auto& [k, v] : s.messages)
    out.Sample({{"device", std::get<0>(k)}, {"host", std::get<1>(k)}, {"kind", parsers::ToString(std::get<2>(k))}},
               static_cast<double>(v));
  out.Family("diskprobe_kernel_log_records_total",
             "Records read from the kernel log since the exporter started (from the start of the ring buffer).",
             MetricType::Counter);
  out.Sample({}, static_cast<double>(s.records));
  out.Family("diskprobe_kernel_log_lost_records_total",
             "Kernel log records overwritten in the ring buffer before they were read (sequence gaps).",
             MetricType::Counter);
  out.Sample({}, static_cast<double>(s.lost));
}

}  // namespace diskprobe::collectors
