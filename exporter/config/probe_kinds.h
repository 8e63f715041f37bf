#pragma once
// The probe kinds as data: one row per kind says its name (config key and `probe` label), the
// settings keys it accepts and their defaults, what it works on and which way its bytes go.
// ProbeKindName, IsWriteProbe, UsesProbeFile, the config validation (config.cpp) and the probes'
// dispatch (probes/kinds.h, which adds each kind's runner) all read this table.
//
// Adding a kind: an enumerator, a row here, its runner row in probes/kinds.cpp, the runner, its
// test, and its documented defaults in config/default.yml (a unit test keeps those and the row's
// defaults equal).
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace diskprobe::config {

// One probe kind's settings (see config/default.yml, probes.defaults). A field a kind does not
// accept (ProbeKindRow::keys) stays 0.
struct ProbeSettings {
  bool enabled = false;
  std::chrono::milliseconds interval{0};
  std::uint32_t ops = 0;           // operations per run
  std::uint64_t block_size = 0;    // bytes per operation
  std::uint64_t size = 0;          // bytes per run (sequential kinds)
  std::uint64_t request_size = 0;  // bytes per request (sequential kinds)
  bool operator==(const ProbeSettings&) const = default;
};

// The kinds, in the order they are exported: kProbeKindTable[i].kind == ProbeKind(i).
enum class ProbeKind { kRandRead = 0, kSeqRead, kWrite, kFsync, kSeqWrite, kVerify };

// What a kind's runs work on.
enum class ProbeTarget {
  kRawDevice,  // /dev/<disk>, opened read-only
  kProbeFile,  // <write directory>/diskprobe_exporter.probe
};

// Which way a kind's bytes go: kWrite kinds write (diskprobe_probe_written_bytes_total, the daily
// write budget), kRead kinds only read (diskprobe_probe_read_bytes_total).
enum class ByteDirection { kRead, kWrite };

// The settings keys of a kind, a bit each in ProbeKindRow::keys.
enum class ProbeKey : unsigned { kEnabled = 0, kInterval, kOps, kBlockSize, kSize, kRequestSize };
inline constexpr std::array<std::string_view, 6> kProbeKeyNames = {"enabled",    "interval", "ops",
                                                                   "block_size", "size",     "request_size"};
constexpr unsigned KeyBit(ProbeKey k) { return 1u << static_cast<unsigned>(k); }

struct ProbeKindRow {
  ProbeKind kind;
  std::string_view name;  // config key under probes.defaults and the `probe` label
  ProbeTarget target;
  ByteDirection direction;
  unsigned keys;             // KeyBit()s of the accepted settings keys
  std::uint64_t block_unit;  // block_size must be a multiple of this (kinds with block_size)
  ProbeSettings defaults;    // as documented in config/default.yml

  bool Accepts(ProbeKey k) const { return (keys & KeyBit(k)) != 0; }
};

namespace detail {
using std::chrono::hours;
using std::chrono::minutes;
inline constexpr std::uint64_t kKiB = 1ull << 10, kMiB = 1ull << 20;
inline constexpr unsigned kCommon = KeyBit(ProbeKey::kEnabled) | KeyBit(ProbeKey::kInterval);
inline constexpr unsigned kOpsBlocks = kCommon | KeyBit(ProbeKey::kOps) | KeyBit(ProbeKey::kBlockSize);
inline constexpr unsigned kSequential = kCommon | KeyBit(ProbeKey::kSize) | KeyBit(ProbeKey::kRequestSize);
}  // namespace detail

// block_unit: randread reads whole sectors with O_DIRECT (rounded up to the device's logical block
// size at run time); write and fsync write whole 4 KiB probe-file blocks, each stamped with its
// header and CRC. Sequential sizes are checked by their own rule (config.cpp).
inline constexpr ProbeKindRow kProbeKindTable[] = {
    {ProbeKind::kRandRead,
     "randread",
     ProbeTarget::kRawDevice,
     ByteDirection::kRead,
     detail::kOpsBlocks,
     512,
     {true, detail::minutes(1), 16, 4 * detail::kKiB, 0, 0}},
    {ProbeKind::kSeqRead,
     "seqread",
     ProbeTarget::kRawDevice,
     ByteDirection::kRead,
     detail::kSequential,
     0,
     {true, detail::minutes(15), 0, 0, 8 * detail::kMiB, 1 * detail::kMiB}},
    {ProbeKind::kWrite,
     "write",
     ProbeTarget::kProbeFile,
     ByteDirection::kWrite,
     detail::kOpsBlocks,
     4096,
     {true, detail::minutes(5), 8, 4 * detail::kKiB, 0, 0}},
    {ProbeKind::kFsync,
     "fsync",
     ProbeTarget::kProbeFile,
     ByteDirection::kWrite,
     detail::kOpsBlocks,
     4096,
     {true, detail::minutes(5), 4, 4 * detail::kKiB, 0, 0}},
    {ProbeKind::kSeqWrite,
     "seqwrite",
     ProbeTarget::kProbeFile,
     ByteDirection::kWrite,
     detail::kSequential,
     0,
     {false, detail::hours(6), 0, 0, 8 * detail::kMiB, 1 * detail::kMiB}},
    {ProbeKind::kVerify,
     "verify",
     ProbeTarget::kProbeFile,
     ByteDirection::kRead,
     detail::kCommon | KeyBit(ProbeKey::kOps),
     0,
     {true, detail::minutes(5), 8, 0, 0, 0}},
};

inline constexpr int kProbeKinds = static_cast<int>(std::size(kProbeKindTable));

namespace detail {
constexpr bool RowsInEnumOrder() {
  for (int i = 0; i < kProbeKinds; ++i)
    if (static_cast<int>(kProbeKindTable[i].kind) != i) return false;
  return true;
}
}  // namespace detail
static_assert(detail::RowsInEnumOrder(), "kProbeKindTable: one row per ProbeKind, in enum order");

constexpr const ProbeKindRow& KindRow(ProbeKind k) { return kProbeKindTable[static_cast<int>(k)]; }
// "randread", "seqread", "write", "fsync", "seqwrite", "verify"
constexpr std::string_view ProbeKindName(ProbeKind k) { return KindRow(k).name; }
constexpr bool IsWriteProbe(ProbeKind k) { return KindRow(k).direction == ByteDirection::kWrite; }
// Kinds that work in the probe file (the write probes, and verify, which reads it back).
constexpr bool UsesProbeFile(ProbeKind k) { return KindRow(k).target == ProbeTarget::kProbeFile; }
// The kind named `name`; nullopt for none.
constexpr std::optional<ProbeKind> ProbeKindNamed(std::string_view name) {
  for (const ProbeKindRow& r : kProbeKindTable)
    if (r.name == name) return r.kind;
  return std::nullopt;
}

// Every kind's settings; each kind starts from its row's defaults.
struct ProbeSet {
  ProbeSettings kinds[kProbeKinds];
  ProbeSet() {
    for (int i = 0; i < kProbeKinds; ++i) kinds[i] = kProbeKindTable[i].defaults;
  }
  ProbeSettings& operator[](ProbeKind k) { return kinds[static_cast<int>(k)]; }
  const ProbeSettings& operator[](ProbeKind k) const { return kinds[static_cast<int>(k)]; }
};

}  // namespace diskprobe::config
