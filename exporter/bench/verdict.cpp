#include "bench/verdict.h"

#include <cstdio>

namespace diskprobe::bench {

const std::vector<AppClassThresholds>& AppClasses() {
  static const std::vector<AppClassThresholds> k = {
      {"A1", 1, 1500, 500, 10e6},
      {"A2", 2, 4000, 2000, 10e6},
  };
  return k;
}

std::string AppClassName(unsigned code) {
  switch (code) {
    case 0: return "none";
    case 1: return "A1";
    case 2: return "A2";
    default: return "reserved";
  }
}

namespace {

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string Describe(const ClassCheck& c) {
  if (c.metric == "seq_write_bytes_per_second")
    return "sequential write " + (c.measured ? Fmt("%.1f", *c.measured / 1e6) : std::string("?")) + " MB/s (needs " +
           Fmt("%.0f", c.required / 1e6) + ")";
  std::string what = c.metric == "read_iops" ? "random read " : "random write ";
  return what + (c.measured ? Fmt("%.0f", *c.measured) : std::string("?")) + " IOPS (needs " + Fmt("%.0f", c.required) +
         ")";
}

}  // namespace

Verdict Judge(const VerdictInput& in) {
  Verdict v;
  v.claimed_class = in.claimed_class ? AppClassName(*in.claimed_class) : "unknown";
  for (const auto& t : AppClasses()) {
    ClassVerdict cv;
    cv.name = t.name;
    auto add = [&](const std::string& metric, double required, std::optional<double> measured) {
      ClassCheck c{metric, required, measured, std::nullopt};
      if (measured) c.pass = *measured >= required;
      cv.checks.push_back(c);
    };
    add("read_iops", t.read_iops, in.read_iops);
    add("write_iops", t.write_iops, in.write_iops);
    add("seq_write_bytes_per_second", t.seq_write_bytes_per_second, in.seq_write_bytes_per_second);
    bool any_fail = false, all_pass = true;
    for (const auto& c : cv.checks) {
      if (c.pass && !*c.pass) any_fail = true;
      if (!c.pass || !*c.pass) all_pass = false;
    }
    if (any_fail) cv.pass = false;
    else if (all_pass) cv.pass = true;
    v.classes.push_back(cv);
  }
  // Classes are nested (A2's thresholds are all >= A1's), so the highest one passed is the class.
  const ClassVerdict &a1 = v.classes[0], &a2 = v.classes[1];
  if (a2.pass == true) v.measured_class = "A2";
  else if (a1.pass == true && a2.pass == false) v.measured_class = "A1";
  else if (a1.pass == false) v.measured_class = "none";
  else v.measured_class = "unknown";

  if (in.claimed_class && (*in.claimed_class == 1 || *in.claimed_class == 2)) {
    const ClassVerdict& claimed = v.classes[*in.claimed_class - 1];
    if (claimed.pass == false) {
      std::string why;
      for (const auto& c : claimed.checks)
        if (c.pass == false) why += (why.empty() ? "" : ", ") + Describe(c);
      v.warnings.push_back("the card claims " + claimed.name + " in its SSR but under-delivers: " + why);
    } else if (!claimed.pass) {
      v.warnings.push_back("the card claims " + claimed.name +
                           " in its SSR; not every figure could be measured, so the claim is unchecked");
    }
  }
  return v;
}

}  // namespace diskprobe::bench
