#pragma once
// A disk's daily write budget (probes.write_budget_per_day): the bytes the write probes may write
// to the disk per UTC day. The ledgers are the probe files' headers (ProbeFileHeader::budget_day
// and budget_used), so the budget survives restarts without writing anywhere else; a disk with
// several write directories sums their files.
//
// Rules: every write operation asks first (Take) and does not start when it would exceed the
// limit; every run also reserves the header write that persists the ledger (ReserveRun), and
// starts only when that leaves room; creating a probe file is charged after the fact (Charge)
// and is refused only when the day's budget is already spent (MayCreate). Not thread-safe: the
// disk's worker thread owns it.
#include <cstdint>
#include <vector>

#include "probes/probe_file.h"

namespace diskprobe::probes {

class WriteBudget {
 public:
  // Adds or removes the ledger of an open probe file; a removed file's bytes stop counting.
  void Attach(ProbeFileHeader* ledger);
  void Detach(ProbeFileHeader* ledger);

  // Bytes written on `today` (UTC day number) over every ledger. A ledger of an earlier day is
  // reset to `today` with 0 bytes first: the day rolled over.
  std::uint64_t Used(std::uint64_t today);
  // limit - Used(today), 0 when spent or overspent.
  std::uint64_t Remaining(std::uint64_t today, std::uint64_t limit);

  // True when a probe file may be created today: some budget is left.
  bool MayCreate(std::uint64_t today, std::uint64_t limit) { return Used(today) < limit; }
  // Charges `bytes` already written (a creation) to `ledger`, limit or not.
  void Charge(ProbeFileHeader& ledger, std::uint64_t bytes, std::uint64_t today);
  // A run's start: reserves one header block (kProbeBlock) in `ledger` when, with it, at least one
  // byte of the budget is left; false (nothing reserved) otherwise.
  bool ReserveRun(ProbeFileHeader& ledger, std::uint64_t today, std::uint64_t limit);
  // A write operation of `bytes`: charged to `ledger` when it fits within the limit; false when not.
  bool Take(ProbeFileHeader& ledger, std::uint64_t bytes, std::uint64_t today, std::uint64_t limit);

 private:
  std::vector<ProbeFileHeader*> ledgers_;
};

}  // namespace diskprobe::probes
