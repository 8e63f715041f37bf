#include "probes/kinds.h"

#include <array>

namespace diskprobe::probes {
namespace {

using config::ProbeKind;

// One row per kind, in config::ProbeKind order (checked below). A runner receives the target its
// row in config::kProbeKindTable names, never the other.
constexpr std::array<KindRunner, config::kProbeKinds> kKindRunners = {{
    {ProbeKind::kRandRead,
     [](const RunTarget& t, RunEnv& env) {
       return RunRandRead(t.device->fd, t.device->direct, t.device->bytes, t.device->align, env);
     }},
    {ProbeKind::kSeqRead,
     [](const RunTarget& t, RunEnv& env) {
       return RunSeqRead(t.device->fd, t.device->direct, t.device->bytes, t.device->align, env);
     }},
    {ProbeKind::kWrite, [](const RunTarget& t, RunEnv& env) { return RunWrite(*t.file, env); }},
    {ProbeKind::kFsync, [](const RunTarget& t, RunEnv& env) { return RunFsync(*t.file, env); }},
    {ProbeKind::kSeqWrite, [](const RunTarget& t, RunEnv& env) { return RunSeqWrite(*t.file, env); }},
    {ProbeKind::kVerify, [](const RunTarget& t, RunEnv& env) { return RunVerify(*t.file, env); }},
}};

// A missing row leaves a null runner (std::array value-initialises the rest): a compile error here.
constexpr bool OneRunnerPerKind() {
  for (int i = 0; i < config::kProbeKinds; ++i)
    if (kKindRunners[i].run == nullptr || static_cast<int>(kKindRunners[i].kind) != i) return false;
  return true;
}
static_assert(OneRunnerPerKind(), "kKindRunners: one runner per config::ProbeKind, in enum order");

}  // namespace

const KindRunner& RunnerOf(config::ProbeKind kind) { return kKindRunners[static_cast<std::size_t>(kind)]; }

}  // namespace diskprobe::probes
