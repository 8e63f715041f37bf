#include "collectors/collector.h"

#include "util/log.h"

namespace diskprobe::collectors {

prometheus::MetricFamily& AddFamily(Families* out, std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  out->push_back(std::move(f));
  return out->back();
}

void AddSample(prometheus::MetricFamily& family, Labels labels, double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  switch (family.type) {
    case prometheus::MetricType::Counter: m.counter.value = value; break;
    case prometheus::MetricType::Gauge: m.gauge.value = value; break;
    default: m.untyped.value = value; break;
  }
  family.metric.push_back(std::move(m));
}

void ErrorState::Set(const std::string& reason) {
  if (reason == last_) return;
  if (reason.empty()) {
    log::Info("collector recovered", {{"collector", collector_}});
  } else {
    log::Error("collector failed", {{"collector", collector_}, {"err", reason}});
  }
  last_ = reason;
}

}  // namespace diskprobe::collectors
