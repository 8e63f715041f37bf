#pragma once
// `diskprobe_exporter bench --capacity-check DIR`: the fake-capacity check, in the role of H2testw
// and f3write/f3read. A counterfeit card claims more than it stores: writes past its real size
// land on earlier blocks (wrap-around), vanish (reading back zeros) or come back as garbage. The
// check fills free space of the filesystem holding DIR with blocks that say where they belong,
// syncs them, reads them back bypassing the page cache and reports how much came back intact.
//
// Where it writes: only into a directory of its own, DIR/diskprobe-capacity-check, created with
// mkdirat (fails on anything already there, a symlink included) in DIR opened without following a
// symlink in any component (probes::OpenDirectoryNoFollow); the fill files are created inside it
// with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600. Never below a free-space floor; never more than the
// size given. Everything it created is removed at the end, also after ENOSPC, a write error or
// SIGINT/SIGTERM (the stop flag). Existing files are never opened for writing.
//
// Block format (kFillBlock = 4096 bytes, little-endian), block i of the fill at fill offset i*4096:
//   bytes 0-7 "DPFILL01", 8-15 the run id (random per run), 16-23 the block's fill offset, 24-31
//   the index of the file holding it, 32-4091 pseudo-random bytes derived from run id and offset
//   (xorshift64*: incompressible, different per block), 4092-4095 CRC32C (Castagnoli, the probe
//   file's CRC, probes::Crc32c) of bytes 0-4091.
// The fill offset counts across the fill files in creation order; the fill is written in that
// order, so on a card whose filesystem allocates it in ascending order (a fresh ext4) the fill
// offset follows the card's own address.
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace diskprobe::bench {

inline constexpr std::size_t kFillBlock = 4096;
// statfs(2) f_type of the filesystems in memory the check refuses (linux/magic.h TMPFS_MAGIC,
// RAMFS_MAGIC).
inline constexpr long kTmpfsMagic = 0x01021994;
inline constexpr long kRamfsMagic = static_cast<long>(0x858458f6);
inline constexpr const char* kCapacityDirName = "diskprobe-capacity-check";
// Each fill file is at most this large: fdatasync per file keeps the dirty page cache bounded and
// an ENOSPC or a stop loses at most one file's progress.
inline constexpr std::uint64_t kFillFileMax = 64ull << 20;

// What a block read back is. Every value is an exported string (KindName), so the switch in
// KindName is exhaustive without a default.
enum class BlockKind {
  kIntact,      // this run's block, at its own offset, CRC good
  kWrapAround,  // a valid block of this run, but another offset's: the card maps both to one place
  kStale,       // a valid block of another run (an earlier check's): this write never landed
  kZeros,       // all 0x00 or all 0xFF: the card dropped the write (erased flash reads either)
  kGarbage,     // anything else, a block with our magic and a bad CRC included
  kReadError,   // the read itself failed (EIO...)
};
std::string KindName(BlockKind k);  // "intact", "wrap_around", "stale", "zeros", "garbage", "read_error"

struct BlockVerdict {
  BlockKind kind = BlockKind::kGarbage;
  std::uint64_t aliased_offset = 0;  // kWrapAround/kStale: the fill offset the block carries
};

// Fills `block` (kFillBlock bytes) as the block at `fill_offset` of file `file_index`, run `run_id`.
void StampFillBlock(unsigned char* block, std::uint64_t run_id, std::uint64_t fill_offset, std::uint64_t file_index);

// Classifies a block read back from `expected_offset` of run `run_id`. Pure; never fails.
BlockVerdict ClassifyFillBlock(const unsigned char* block, std::uint64_t run_id, std::uint64_t expected_offset);

struct CapacityOptions {
  std::string directory;                  // a directory on the filesystem to check
  std::uint64_t max_bytes = 0;            // bound on the fill (the user's size), > 0
  std::uint64_t free_floor = 256ull << 20;  // free bytes that stay free, whatever max_bytes says
  std::string sysfs = "/sys";
  std::string lock_directory;     // probes::kDefaultLockDirectory unless set
  double lock_wait_seconds = 15;  // how long to wait for a running probe to finish
  std::uint64_t file_max = kFillFileMax;  // size of each fill file (a multiple of kFillBlock)
};

inline constexpr std::size_t kMaxBadRanges = 32;

// A run of consecutive bad blocks of one kind (wrap-around and stale: carrying consecutive offsets).
struct BadRange {
  std::uint64_t offset = 0;  // fill offset of the first block
  std::uint64_t bytes = 0;
  BlockKind kind = BlockKind::kGarbage;
  std::uint64_t aliased_offset = 0;  // wrap-around/stale: what the first block of the range carries
};

struct CapacityResult {
  std::string version;
  double started_unix = 0;
  CapacityOptions options;
  std::string check_directory;  // DIR/diskprobe-capacity-check
  std::string disk;             // kernel name of the disk holding DIR ("" if none: tmpfs...)
  std::uint64_t fs_total_bytes = 0, fs_available_bytes = 0;  // statvfs before the fill (f_bavail)
  std::uint64_t planned_bytes = 0;   // min(max_bytes, available - floor), whole blocks
  std::uint64_t written_bytes = 0;   // written and fdatasync'ed
  std::uint64_t verified_bytes = 0;  // read back (read errors included)
  std::uint64_t intact_bytes = 0;    // read back intact: the capacity that holds data
  std::uint64_t files = 0;
  std::uint64_t run_id = 0;
  bool direct_io = true;  // O_DIRECT reads (else buffered after fdatasync + POSIX_FADV_DONTNEED)
  // Bytes the disk's /sys/block/<disk>/stat counted as read during the verification: at least
  // verified_bytes when the reads reached the device rather than a cache.
  std::optional<std::uint64_t> device_read_bytes;
  double write_seconds = 0, verify_seconds = 0;
  // Counts of blocks by kind, indexed by BlockKind.
  std::uint64_t blocks[6] = {};
  // The first kMaxBadRanges runs of bad blocks, in fill order: the first is the first bad offset.
  std::vector<BadRange> bad_ranges;
  bool bad_ranges_truncated = false;
  // The smallest distance between a wrap-around block's offset and the offset it carries: on a
  // card that maps addresses modulo its real size, with the fill laid out in ascending order, the
  // card's real size (in fill bytes).
  std::optional<std::uint64_t> alias_distance;
  // The same between the blocks' addresses on the device (FIEMAP, FS_IOC_FIEMAP: filesystem
  // block device offsets), whatever order the filesystem laid the fill out in: on a card that maps
  // addresses modulo its real size, that size. Unset when FIEMAP is unavailable (notes say why) or
  // no block wrapped.
  std::optional<std::uint64_t> card_alias_distance;
  std::string stop_reason;  // why the fill ended before planned_bytes ("" when it did not)
  bool interrupted = false;  // SIGINT/SIGTERM: verification skipped
  bool removed = false;      // every file and the directory removed
  std::string remove_error;
  std::vector<std::string> notes;
  double elapsed_seconds = 0;
};

// Progress: phase ("writing", "verifying"), bytes done, bytes to do, seconds since the phase began.
using CapacityProgress = std::function<void(const std::string& phase, std::uint64_t done, std::uint64_t total,
                                            double seconds)>;

// Runs the check. `stop`, when set, ends the fill or the verification early (the files are still
// removed). Returns false with *error set when it cannot start: the directory is refused or
// missing, on tmpfs or ramfs (memory would read back intact), DIR/diskprobe-capacity-check exists
// already (a previous run's leftovers: named in the message), the lock is held, or free space
// minus the floor leaves nothing to fill. Once files are created, failures (ENOSPC, EIO, EROFS)
// are part of the result.
bool RunCapacityCheck(const CapacityOptions& opt, const CapacityProgress& progress, const std::atomic<bool>* stop,
                      CapacityResult* result, std::string* error);

// One extent of a file as FIEMAP reports it: `length` bytes at file offset `logical` are at
// device offset `physical`.
struct Extent {
  std::uint64_t logical = 0, physical = 0, length = 0;
};
// The device offset of file offset `offset` in `extents` (sorted by logical), nullopt when no
// extent holds it.
std::optional<std::uint64_t> DeviceOffset(const std::vector<Extent>& extents, std::uint64_t offset);

// Adds one verified block at `offset` to the tallies of `r` (counts, verified and intact bytes,
// bad ranges, alias distance). Blocks must come in ascending offset order.
void TallyBlock(CapacityResult* r, std::uint64_t offset, const BlockVerdict& v);

}  // namespace diskprobe::bench
