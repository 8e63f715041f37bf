#include "probes/runners.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace diskprobe::probes {
namespace {

// Times one operation with stall tracking: op_started_ns is non-zero while the system call runs,
// so a scrape can see an operation that has not returned.
template <typename Op>
OpResult Tracked(RunEnv& env, Op op) {
  env.op_started_ns->store(env.now_ns ? env.now_ns() : MonotonicNs(), std::memory_order_release);
  OpResult r = op();
  env.op_started_ns->store(0, std::memory_order_release);
  return r;
}

// Records a finished op in the outcome; returns false when the run must stop.
bool Account(RunEnv& env, const OpResult& r, RunOutcome* out) {
  if (r.error != 0) {
    out->error = r.error;
    return false;
  }
  ++out->ops;
  out->bytes += r.bytes;
  out->op_ns += r.latency_ns;
  env.observe(static_cast<double>(r.latency_ns) / 1e9);
  if (r.latency_ns > env.deadline_ns) {
    out->timed_out = true;
    return false;
  }
  return true;
}

// One write operation of the write probes: asks the budget, stamps every block of [off, off+len)
// with its header, times `op` (which writes buf at off), records the blocks as written when it
// succeeded, and accounts the result. Returns false when the run must stop.
template <typename Op>
bool WriteBlocks(ProbeFile& file, RunEnv& env, AlignedBuffer& buf, std::uint64_t off, std::uint64_t len, Op op,
                 RunOutcome* out) {
  if (!env.take_budget(len)) {
    out->budget_exhausted = true;
    return false;
  }
  for (std::uint64_t i = 0; i < len; i += kProbeBlock) file.StampBlock(buf.data() + i, (off + i) / kProbeBlock);
  OpResult r = Tracked(env, op);
  if (r.error == 0) file.CommitWritten(off, len);
  return Account(env, r, out);
}

}  // namespace

std::vector<std::uint64_t> RandomOffsets(std::mt19937_64& rng, std::uint64_t limit, std::uint64_t len,
                                         std::uint64_t align, std::uint32_t count) {
  std::vector<std::uint64_t> out;
  if (align == 0 || limit < len) return out;
  const std::uint64_t slots = (limit - len) / align + 1;
  const std::uint64_t n = std::min<std::uint64_t>(count, slots);
  std::unordered_set<std::uint64_t> used;
  std::uniform_int_distribution<std::uint64_t> pick(0, slots - 1);
  while (out.size() < n) {
    std::uint64_t s = pick(rng);
    if (used.insert(s).second) out.push_back(s * align);
  }
  return out;
}

RunOutcome RunRandRead(int fd, bool direct, std::uint64_t device_bytes, std::uint64_t align, RunEnv& env) {
  RunOutcome out;
  // O_DIRECT needs whole logical blocks: block_size rounded up to them (6 KiB on a 4 KiB-sector
  // disk reads 8 KiB; the config only guarantees whole 512-byte sectors).
  const std::uint64_t bs = std::max<std::uint64_t>((env.settings.block_size + align - 1) / align * align, align);
  AlignedBuffer buf(bs, align);
  for (std::uint64_t off :
       RandomOffsets(env.rng, device_bytes, bs, std::max<std::uint64_t>(bs, align), env.settings.ops)) {
    if (!direct) DropCache(fd, off, bs);
    OpResult r = Tracked(env, [&] { return TimedPread(fd, buf.data(), bs, off); });
    if (!Account(env, r, &out)) break;
  }
  return out;
}

RunOutcome RunSeqRead(int fd, bool direct, std::uint64_t device_bytes, std::uint64_t align, RunEnv& env) {
  RunOutcome out;
  const std::uint64_t req = std::max<std::uint64_t>(env.settings.request_size / align * align, align);
  const std::uint64_t total = std::min<std::uint64_t>(env.settings.size / req * req, device_bytes / req * req);
  if (total == 0) return out;
  auto start = RandomOffsets(env.rng, device_bytes, total, req, 1);
  if (start.empty()) return out;
  AlignedBuffer buf(req, align);
  if (!direct) DropCache(fd, start[0], total);
  for (std::uint64_t off = start[0]; off < start[0] + total; off += req) {
    OpResult r = Tracked(env, [&] { return TimedPread(fd, buf.data(), req, off); });
    if (!Account(env, r, &out)) break;
  }
  return out;
}

RunOutcome RunWrite(ProbeFile& file, RunEnv& env) {
  RunOutcome out;
  const std::uint64_t bs = std::max<std::uint64_t>(env.settings.block_size / kProbeBlock * kProbeBlock, kProbeBlock);
  AlignedBuffer buf(bs, kProbeBlock);
  // Block 0 is the header: data offsets start at one block.
  const std::uint64_t limit = file.data_blocks() * kProbeBlock;
  for (std::uint64_t rel : RandomOffsets(env.rng, limit, bs, bs, env.settings.ops)) {
    const std::uint64_t off = rel + kProbeBlock;
    if (!WriteBlocks(
            file, env, buf, off, bs, [&] { return TimedPwrite(file.io_fd(), buf.data(), bs, off); }, &out))
      break;
  }
  return out;
}

RunOutcome RunFsync(ProbeFile& file, RunEnv& env) {
  RunOutcome out;
  const std::uint64_t bs = std::max<std::uint64_t>(env.settings.block_size / kProbeBlock * kProbeBlock, kProbeBlock);
  AlignedBuffer buf(bs, kProbeBlock);
  const std::uint64_t limit = file.data_blocks() * kProbeBlock;
  for (std::uint64_t rel : RandomOffsets(env.rng, limit, bs, bs, env.settings.ops)) {
    const std::uint64_t off = rel + kProbeBlock;
    bool go = WriteBlocks(
        file, env, buf, off, bs, [&] { return TimedPwriteFdatasync(file.sync_fd(), buf.data(), bs, off); }, &out);
    // Keep the page cache free of the probe file: it must not grow at the workload's expense.
    DropCache(file.sync_fd(), off, bs);
    if (!go) break;
  }
  return out;
}

RunOutcome RunSeqWrite(ProbeFile& file, RunEnv& env) {
  RunOutcome out;
  const std::uint64_t req = std::max<std::uint64_t>(env.settings.request_size / kProbeBlock * kProbeBlock, kProbeBlock);
  const std::uint64_t limit = file.data_blocks() * kProbeBlock;
  const std::uint64_t total = std::min<std::uint64_t>(env.settings.size / req * req, limit / req * req);
  if (total == 0) return out;
  auto start = RandomOffsets(env.rng, limit, total, kProbeBlock, 1);
  if (start.empty()) return out;
  AlignedBuffer buf(req, kProbeBlock);
  for (std::uint64_t rel = start[0]; rel < start[0] + total; rel += req) {
    const std::uint64_t off = rel + kProbeBlock;
    if (!WriteBlocks(
            file, env, buf, off, req, [&] { return TimedPwrite(file.io_fd(), buf.data(), req, off); }, &out))
      break;
  }
  return out;
}

RunOutcome RunVerify(ProbeFile& file, RunEnv& env) {
  RunOutcome out;
  AlignedBuffer buf(kProbeBlock, kProbeBlock);
  // (block index, expected sequence if known)
  std::vector<std::pair<std::uint64_t, std::optional<std::uint64_t>>> picks;
  const std::uint32_t n = env.settings.ops;
  for (const auto& [index, seq] : file.recent()) {
    if (picks.size() >= (n + 1) / 2) break;
    picks.emplace_back(index, seq);
  }
  for (std::uint64_t rel : RandomOffsets(env.rng, file.data_blocks() * kProbeBlock, kProbeBlock, kProbeBlock, n)) {
    if (picks.size() >= n) break;
    const std::uint64_t index = rel / kProbeBlock + 1;
    bool dup = false;
    for (const auto& p : picks) dup = dup || p.first == index;
    if (!dup) picks.emplace_back(index, std::nullopt);
  }
  for (const auto& [index, seq] : picks) {
    const std::uint64_t off = index * kProbeBlock;
    if (!file.direct_io()) DropCache(file.io_fd(), off, kProbeBlock);
    OpResult r = Tracked(env, [&] { return TimedPread(file.io_fd(), buf.data(), kProbeBlock, off); });
    if (!Account(env, r, &out)) break;
    std::string problem = CheckBlock(buf.data(), index, seq);
    if (!problem.empty()) out.corruptions.push_back({off, problem});
  }
  return out;
}

}  // namespace diskprobe::probes
