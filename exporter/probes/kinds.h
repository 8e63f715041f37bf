#pragma once
// The probes' half of the probe-kind table (config/probe_kinds.h has the data half: name, keys,
// defaults, target, direction): each kind's runner, behind one signature, so a job dispatches
// through the table and never through a comparison of kinds.
//
// The two halves are one table split by the layering: config validation needs the rows' keys and
// defaults and sits below probes; the runners need probe files and I/O and sit in probes. Each
// half is checked at compile time to have exactly one row per kind, in enum order.
#include <cstdint>

#include "config/probe_kinds.h"
#include "probes/runners.h"

namespace diskprobe::probes {

// The raw device a kProbeTarget::kRawDevice kind reads, opened by the job (probes/env.h).
struct RawDevice {
  int fd = -1;
  bool direct = true;          // opened O_DIRECT
  std::uint64_t bytes = 0;     // device size
  std::uint64_t align = 4096;  // max(4096, logical block size)
};

// What a run works on: `device` for raw-device kinds, `file` for probe-file kinds (the other null).
struct RunTarget {
  const RawDevice* device = nullptr;
  ProbeFile* file = nullptr;
};

using Runner = RunOutcome (*)(const RunTarget& target, RunEnv& env);

struct KindRunner {
  config::ProbeKind kind;
  Runner run;
};

// The runner of `kind`.
const KindRunner& RunnerOf(config::ProbeKind kind);

}  // namespace diskprobe::probes
