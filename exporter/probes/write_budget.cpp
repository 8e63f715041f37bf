#include "probes/write_budget.h"

#include <algorithm>

namespace diskprobe::probes {

void WriteBudget::Attach(ProbeFileHeader* ledger) {
  if (std::find(ledgers_.begin(), ledgers_.end(), ledger) == ledgers_.end()) ledgers_.push_back(ledger);
}

void WriteBudget::Detach(ProbeFileHeader* ledger) { std::erase(ledgers_, ledger); }

std::uint64_t WriteBudget::Used(std::uint64_t today) {
  std::uint64_t used = 0;
  for (ProbeFileHeader* h : ledgers_) {
    if (h->budget_day != today) {
      h->budget_day = today;
      h->budget_used = 0;
    }
    used += h->budget_used;
  }
  return used;
}

std::uint64_t WriteBudget::Remaining(std::uint64_t today, std::uint64_t limit) {
  const std::uint64_t used = Used(today);
  return used >= limit ? 0 : limit - used;
}

void WriteBudget::Charge(ProbeFileHeader& ledger, std::uint64_t bytes, std::uint64_t today) {
  Used(today);                       // rolls every ledger over first
  if (ledger.budget_day != today) {  // a ledger not attached yet
    ledger.budget_day = today;
    ledger.budget_used = 0;
  }
  ledger.budget_used += bytes;
}

bool WriteBudget::ReserveRun(ProbeFileHeader& ledger, std::uint64_t today, std::uint64_t limit) {
  if (Used(today) + kProbeBlock >= limit) return false;
  ledger.budget_used += kProbeBlock;
  return true;
}

bool WriteBudget::Take(ProbeFileHeader& ledger, std::uint64_t bytes, std::uint64_t today, std::uint64_t limit) {
  if (Used(today) + bytes > limit) return false;
  ledger.budget_used += bytes;
  return true;
}

}  // namespace diskprobe::probes
