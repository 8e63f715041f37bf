#include "collectors/kmsg.h"

namespace diskprobe::collectors {

using prometheus::MetricType;

void KmsgCollector::Start(const Paths& paths) {
  if (follower_) return;
  follower_ = std::make_shared<KmsgFollower>(paths.kmsg, paths.sysfs);
  follower_->Start();  // a failure shows at the first scrape, logged once there
}

bool KmsgCollector::Collect(const ScrapeContext& ctx, Families* out) {
  std::optional<KmsgSnapshot> s = TakeSnapshot(ctx);
  if (!s) return false;
  FamiliesSink sink(out);
  Write(*s, sink);
  return true;
}

bool KmsgCollector::CollectWithText(const ScrapeContext& ctx, Families* /*out*/, std::string* text,
                                    std::string* /*tail*/) {
  std::optional<KmsgSnapshot> s = TakeSnapshot(ctx);
  if (!s) return false;
  // The text is a function of the counts alone, which change only when a message is logged.
  if (!cached_ || s->messages != cached_->messages || s->records != cached_->records || s->lost != cached_->lost) {
    cached_text_.clear();
    TextSink sink(&cached_text_);
    Write(*s, sink);
    cached_ = std::move(s);
  }
  *text += cached_text_;
  return true;
}

std::optional<KmsgSnapshot> KmsgCollector::TakeSnapshot(const ScrapeContext& ctx) {
  if (!follower_) {
    errors_.Set("the kernel log follower was not started");
    return std::nullopt;
  }
  std::vector<std::string> disks;
  disks.reserve(ctx.devices.size());
  for (const Device& d : ctx.devices) disks.push_back(d.name);
  KmsgSnapshot s = follower_->Snapshot(disks);
  if (!s.error.empty()) {
    errors_.Set(s.error);
    return std::nullopt;
  }
  errors_.Set("");
  return s;
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
