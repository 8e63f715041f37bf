#include "scrape/collector.h"

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

void FamiliesSink::Family(std::string_view name, std::string_view help, prometheus::MetricType type) {
  name_ = name;
  help_ = help;
  type_ = type;
  current_ = nullptr;
}

void FamiliesSink::Sample(std::initializer_list<LabelView> labels, double value) {
  if (current_ == nullptr) current_ = &AddFamily(out_, std::string(name_), std::string(help_), type_);
  Labels l;
  l.reserve(labels.size());
  for (const LabelView& v : labels) l.push_back({std::string(v.name), std::string(v.value)});
  AddSample(*current_, std::move(l), value);
}

void TextSink::Family(std::string_view name, std::string_view help, prometheus::MetricType type) {
  name_ = name;
  help_ = help;
  type_ = type;
  header_written_ = false;
}

void TextSink::Sample(std::initializer_list<LabelView> labels, double value) {
  if (!header_written_) {
    AppendFamilyHeader(name_, help_, type_, out_);
    header_written_ = true;
  }
  AppendSample(name_, labels, value, out_);
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
