#include "bench/capacity.h"

#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include "parsers/block_stat.h"
#include "probes/device_lock.h"
#include "probes/io.h"
#include "probes/probe_file.h"
#include "util/file.h"
#include "util/strings.h"
#include "version.h"

namespace diskprobe::bench {
namespace {

constexpr char kMagic[8] = {'D', 'P', 'F', 'I', 'L', 'L', '0', '1'};
constexpr std::size_t kCrcAt = kFillBlock - 4;
constexpr std::size_t kChunk = 1 << 20;  // bytes per write and read call

using util::GetU64;
using util::PutU64;

std::string Errno(const std::string& what, int e) { return what + ": " + std::strerror(e); }

std::string Mib(std::uint64_t b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return s;
}

double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }
double Since(std::int64_t t0) { return static_cast<double>(probes::MonotonicNs() - t0) / 1e9; }

bool Stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

// Sectors read by `disk` so far (/sys/block/<disk>/stat field 3), nullopt when unreadable.
std::optional<std::uint64_t> ReadSectors(const std::string& sysfs, const std::string& disk) {
  if (disk.empty()) return std::nullopt;
  util::FileContent f = util::ReadAttribute(util::JoinPath(sysfs, "block/" + disk + "/stat"));
  if (!f.ok()) return std::nullopt;
  auto st = parsers::ParseBlockStat(f.text);
  if (!st) return std::nullopt;
  return st->read_sectors;
}

// One fill file as created: where it starts in the fill, how much of it was written, where its
// blocks are on the device (empty when FIEMAP could not tell).
struct FillFile {
  std::string name;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::vector<Extent> extents;
};

// The extents of [0, size) of `fd` (FIEMAP with FIEMAP_FLAG_SYNC). Returns "" or why not: the
// ioctl refused (a filesystem without FIEMAP) or an extent has no stable device address (delayed
// allocation, inline, encoded or unaligned data).
std::string MapExtents(int fd, std::uint64_t size, std::vector<Extent>* out) {
  constexpr unsigned kBatch = 128;
  std::vector<unsigned char> mem(sizeof(fiemap) + kBatch * sizeof(fiemap_extent));
  std::uint64_t next = 0;
  out->clear();
  while (next < size) {
    std::fill(mem.begin(), mem.end(), 0);
    auto* fm = reinterpret_cast<fiemap*>(mem.data());
    fm->fm_start = next;
    fm->fm_length = size - next;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kBatch;
    if (::ioctl(fd, FS_IOC_FIEMAP, fm) != 0) return Errno("FIEMAP", errno);
    if (fm->fm_mapped_extents == 0) return "FIEMAP: no extent at file offset " + std::to_string(next);
    bool last = false;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
      const fiemap_extent& e = fm->fm_extents[i];
      constexpr unsigned kUnstable = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED |
                                     FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED;
      if (e.fe_flags & kUnstable) return "FIEMAP: an extent without a stable device address";
      out->push_back(Extent{e.fe_logical, e.fe_physical, e.fe_length});
      next = e.fe_logical + e.fe_length;
      last = (e.fe_flags & FIEMAP_EXTENT_LAST) != 0;
    }
    if (last) break;
  }
  return "";
}

// The device offset of fill offset `offset` (files sorted by offset).
std::optional<std::uint64_t> CardAddress(const std::vector<FillFile>& files, std::uint64_t offset) {
  auto it = std::upper_bound(files.begin(), files.end(), offset,
                             [](std::uint64_t o, const FillFile& f) { return o < f.offset; });
  if (it == files.begin()) return std::nullopt;
  --it;
  if (offset >= it->offset + it->bytes) return std::nullopt;
  return DeviceOffset(it->extents, offset - it->offset);
}

}  // namespace

std::string KindName(BlockKind k) {
  switch (k) {
    case BlockKind::kIntact: return "intact";
    case BlockKind::kWrapAround: return "wrap_around";
    case BlockKind::kStale: return "stale";
    case BlockKind::kZeros: return "zeros";
    case BlockKind::kGarbage: return "garbage";
    case BlockKind::kReadError: return "read_error";
  }
  return "garbage";
}

void StampFillBlock(unsigned char* block, std::uint64_t run_id, std::uint64_t fill_offset, std::uint64_t file_index) {
  std::memcpy(block, kMagic, sizeof kMagic);
  PutU64(block + 8, run_id);
  PutU64(block + 16, fill_offset);
  PutU64(block + 24, file_index);
  // xorshift64*, seeded from run and offset through splitmix64's finaliser, so runs or offsets
  // that differ in one bit give unrelated payloads (never 0, xorshift's fixed point).
  auto mix = [](std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::uint64_t s = mix(run_id ^ mix(fill_offset));
  if (s == 0) s = 1;
  for (std::size_t i = 32; i < kCrcAt; i += 8) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const std::uint64_t v = s * 2685821657736338717ull;
    std::memcpy(block + i, &v, std::min<std::size_t>(8, kCrcAt - i));
  }
  const std::uint32_t crc = probes::Crc32c(block, kCrcAt);
  for (int i = 0; i < 4; ++i) block[kCrcAt + i] = static_cast<unsigned char>(crc >> (8 * i));
}

BlockVerdict ClassifyFillBlock(const unsigned char* block, std::uint64_t run_id, std::uint64_t expected_offset) {
  BlockVerdict v;
  if (std::memcmp(block, kMagic, sizeof kMagic) == 0) {
    std::uint32_t stored = 0;
    for (int i = 0; i < 4; ++i) stored |= static_cast<std::uint32_t>(block[kCrcAt + i]) << (8 * i);
    if (stored == probes::Crc32c(block, kCrcAt)) {
      v.aliased_offset = GetU64(block + 16);
      if (GetU64(block + 8) != run_id) v.kind = BlockKind::kStale;
      else v.kind = v.aliased_offset == expected_offset ? BlockKind::kIntact : BlockKind::kWrapAround;
      return v;
    }
    return v;  // our magic, a bad CRC: corrupted
  }
  const unsigned char first = block[0];
  if ((first == 0x00 || first == 0xFF) &&
      std::all_of(block, block + kFillBlock, [first](unsigned char c) { return c == first; }))
    v.kind = BlockKind::kZeros;
  return v;
}

std::optional<std::uint64_t> DeviceOffset(const std::vector<Extent>& extents, std::uint64_t offset) {
  auto it = std::upper_bound(extents.begin(), extents.end(), offset,
                             [](std::uint64_t o, const Extent& e) { return o < e.logical; });
  if (it == extents.begin()) return std::nullopt;
  --it;
  if (offset >= it->logical + it->length) return std::nullopt;
  return it->physical + (offset - it->logical);
}

void TallyBlock(CapacityResult* r, std::uint64_t offset, const BlockVerdict& v) {
  ++r->blocks[static_cast<int>(v.kind)];
  r->verified_bytes += kFillBlock;
  if (v.kind == BlockKind::kIntact) {
    r->intact_bytes += kFillBlock;
    return;
  }
  const bool aliases = v.kind == BlockKind::kWrapAround || v.kind == BlockKind::kStale;
  if (v.kind == BlockKind::kWrapAround) {
    const std::uint64_t d = v.aliased_offset > offset ? v.aliased_offset - offset : offset - v.aliased_offset;
    if (!r->alias_distance || d < *r->alias_distance) r->alias_distance = d;
  }
  if (!r->bad_ranges.empty()) {
    BadRange& last = r->bad_ranges.back();
    const bool adjacent = last.offset + last.bytes == offset && last.kind == v.kind;
    if (adjacent && (!aliases || last.aliased_offset + last.bytes == v.aliased_offset)) {
      last.bytes += kFillBlock;
      return;
    }
  }
  if (r->bad_ranges.size() >= kMaxBadRanges) {
    r->bad_ranges_truncated = true;
    return;
  }
  r->bad_ranges.push_back(BadRange{offset, kFillBlock, v.kind, aliases ? v.aliased_offset : 0});
}

bool RunCapacityCheck(const CapacityOptions& opt, const CapacityProgress& progress, const std::atomic<bool>* stop,
                      CapacityResult* result, std::string* error) {
  const std::int64_t t_start = probes::MonotonicNs();
  CapacityResult& R = *result;
  R = CapacityResult{};
  R.version = kVersion;
  R.options = opt;
  R.started_unix = UnixNow();
  const std::uint64_t file_max = std::max<std::uint64_t>(opt.file_max / kFillBlock * kFillBlock, kFillBlock);

  if (std::string refusal = probes::CheckProbeDirectory(opt.directory); !refusal.empty()) {
    *error = refusal;
    return false;
  }
  std::string derr;
  int derrno = 0;
  probes::Fd parent = probes::OpenDirectoryNoFollow(opt.directory, false, &derr, &derrno);
  if (!parent.valid()) {
    *error = derr;
    return false;
  }
  struct stat pst {};
  if (::fstat(parent.get(), &pst) != 0 || !S_ISDIR(pst.st_mode)) {
    *error = "directory " + opt.directory + " is not a directory";
    return false;
  }
  R.disk = probes::DiskOfDev(opt.sysfs, pst.st_dev);
  R.check_directory = util::JoinPath(opt.directory, kCapacityDirName);

  // A filesystem in memory holds whatever it is given: the fill would read back intact and the
  // verdict would say "ok" about RAM, not about a card.
  struct statfs sfs {};
  if (::fstatfs(parent.get(), &sfs) == 0 && (sfs.f_type == kTmpfsMagic || sfs.f_type == kRamfsMagic)) {
    *error = "directory " + opt.directory + " is on " + (sfs.f_type == kTmpfsMagic ? "tmpfs" : "ramfs") +
             " (memory, not a card): give a directory on the card's filesystem";
    return false;
  }
  struct statvfs vfs {};
  if (::fstatvfs(parent.get(), &vfs) != 0) {
    *error = Errno("statvfs " + opt.directory, errno);
    return false;
  }
  R.fs_total_bytes = static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  R.fs_available_bytes = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (R.fs_available_bytes < opt.free_floor + kFillBlock) {
    *error = "only " + Mib(R.fs_available_bytes) + " free on the filesystem of " + opt.directory +
             ", at or below the free-space floor of " + Mib(opt.free_floor) +
             ": nothing to fill (lower --free-floor, or free some space)";
    return false;
  }
  R.planned_bytes = std::min(opt.max_bytes, R.fs_available_bytes - opt.free_floor) / kFillBlock * kFillBlock;
  if (R.planned_bytes == 0) {
    *error = "--capacity-max is smaller than one block (" + std::to_string(kFillBlock) + " bytes)";
    return false;
  }

  // The exporter's write probes stay off the disk meanwhile (their probe file could hit ENOSPC).
  probes::DeviceLock lock;
  if (!R.disk.empty()) {
    const std::string lock_dir = opt.lock_directory.empty() ? probes::kDefaultLockDirectory : opt.lock_directory;
    // Said only when there is a wait: a free lock is taken at once.
    lock = probes::DeviceLock::Acquire(lock_dir, R.disk);
    if (lock.state() == probes::DeviceLock::State::kBusy && opt.lock_wait_seconds > 0) {
      if (progress) progress("waiting for the lock on " + R.disk, 0, 0, 0);
      lock = probes::DeviceLock::Acquire(lock_dir, R.disk,
                                         std::chrono::milliseconds(static_cast<long>(opt.lock_wait_seconds * 1000)));
    }
    if (lock.state() == probes::DeviceLock::State::kBusy) {
      *error = "disk " + R.disk + " is being probed by diskprobe_exporter (" + lock.path() +
               " is locked); refusing to run beside it: try again, or disable the exporter's probes on " + R.disk;
      return false;
    }
    if (!lock.held()) {
      *error = lock.error() + " (needed to keep the exporter's probes off the disk; see --lock-dir)";
      return false;
    }
  }

  // mkdirat creates or fails: an existing entry of that name (a directory, a file, a symlink) is
  // never reused, so nothing but what this run creates is ever written.
  if (::mkdirat(parent.get(), kCapacityDirName, 0700) != 0) {
    const int e = errno;
    *error = e == EEXIST ? R.check_directory +
                               " exists (the leftovers of an interrupted check?): remove it and run again"
                         : Errno("cannot create " + R.check_directory, e);
    return false;
  }
  probes::Fd dir(::openat(parent.get(), kCapacityDirName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat dst {};
  if (!dir.valid() || ::fstat(dir.get(), &dst) != 0 || !S_ISDIR(dst.st_mode) || dst.st_dev != pst.st_dev) {
    const int e = dir.valid() ? EINVAL : errno;
    dir.reset();
    ::unlinkat(parent.get(), kCapacityDirName, AT_REMOVEDIR);
    *error = Errno("cannot open the directory just created, " + R.check_directory, e);
    return false;
  }

  std::random_device rd;
  R.run_id = (static_cast<std::uint64_t>(rd()) << 32 | rd()) ^ static_cast<std::uint64_t>(probes::MonotonicNs());
  std::vector<FillFile> files;
  probes::AlignedBuffer buf(kChunk, kFillBlock);

  // Fill: files of file_max bytes written in 1 MiB buffered writes, each fdatasync'ed and its
  // page cache dropped before the next, so the verification reads what the card stored.
  std::string fiemap_error;
  const std::int64_t t_write = probes::MonotonicNs();
  std::uint64_t offset = 0;
  while (offset < R.planned_bytes && R.stop_reason.empty() && !Stopped(stop)) {
    // Free space again before each file: another writer may have taken some meanwhile.
    std::uint64_t room = 0;
    if (::fstatvfs(dir.get(), &vfs) == 0) {
      const std::uint64_t avail = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      room = avail > opt.free_floor ? (avail - opt.free_floor) / kFillBlock * kFillBlock : 0;
    }
    const std::uint64_t size = std::min({file_max, R.planned_bytes - offset, room});
    if (size == 0) {
      // The plan is free space minus the floor when the check starts; the fill files' own
      // metadata (inodes, extent blocks) takes some of it, so the floor can come a few blocks
      // early with no other writer.
      R.stop_reason = "free space reached the floor after " + Mib(offset) + " of the planned " + Mib(R.planned_bytes) +
                      " (the fill files' own filesystem metadata, or another writer)";
      break;
    }
    char name[32];
    std::snprintf(name, sizeof name, "fill-%06zu", files.size());
    probes::Fd fd(::openat(dir.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) {
      R.stop_reason = Errno("cannot create " + std::string(name), errno);
      break;
    }
    files.push_back(FillFile{name, offset, 0, {}});
    FillFile& f = files.back();
    std::uint64_t done = 0;
    while (done < size && R.stop_reason.empty() && !Stopped(stop)) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, size - done));
      for (std::size_t i = 0; i < chunk; i += kFillBlock)
        StampFillBlock(buf.data() + i, R.run_id, offset + done + i, files.size() - 1);
      std::size_t put = 0;
      while (put < chunk) {
        const ssize_t n = ::pwrite(fd.get(), buf.data() + put, chunk - put, static_cast<off_t>(done + put));
        if (n > 0) {
          put += static_cast<std::size_t>(n);
          continue;
        }
        const int e = n == 0 ? EIO : errno;
        if (e == EINTR && !Stopped(stop)) continue;
        if (e == EINTR) break;
        R.stop_reason = e == ENOSPC || e == EDQUOT
                            ? Errno("the filesystem ran out of room after " + Mib(offset + done + put) +
                                        " although it reported more free",
                                    e)
                            : Errno("write at fill offset " + std::to_string(offset + done + put), e);
        break;
      }
      // Only whole blocks count: a block cut short by ENOSPC is not verified.
      done += put / kFillBlock * kFillBlock;
      if (put < chunk) break;
      if (progress) progress("writing", offset + done, R.planned_bytes, Since(t_write));
    }
    if (::fdatasync(fd.get()) != 0 && R.stop_reason.empty())
      R.stop_reason = Errno("fdatasync of " + std::string(name), errno);
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    f.bytes = done;
    if (std::string why = MapExtents(fd.get(), done, &f.extents); !why.empty()) {
      if (fiemap_error.empty()) fiemap_error = why;
      f.extents.clear();
    }
    offset += done;
    R.written_bytes = offset;
  }
  R.files = files.size();
  R.write_seconds = Since(t_write);
  if (!fiemap_error.empty())
    R.notes.push_back("device addresses of the fill unknown (" + fiemap_error +
                      "): the alias distance is in fill offsets only");
  if (Stopped(stop)) {
    R.interrupted = true;
    if (R.stop_reason.empty()) R.stop_reason = "interrupted after writing " + Mib(R.written_bytes);
  }

  // Verification: O_DIRECT reads of every block written, in fill order.
  if (!R.interrupted) {
    const std::int64_t t_verify = probes::MonotonicNs();
    const std::optional<std::uint64_t> sectors_before = ReadSectors(opt.sysfs, R.disk);
    BlockVerdict read_error;
    read_error.kind = BlockKind::kReadError;
    auto bad_all = [&](std::uint64_t from, std::uint64_t to) {
      for (std::uint64_t o = from; o < to; o += kFillBlock) TallyBlock(&R, o, read_error);
    };
    auto tally = [&](std::uint64_t offset, const BlockVerdict& v) {
      TallyBlock(&R, offset, v);
      if (v.kind != BlockKind::kWrapAround) return;
      const auto a = CardAddress(files, offset), b = CardAddress(files, v.aliased_offset);
      if (!a || !b || *a == *b) return;
      const std::uint64_t d = *a > *b ? *a - *b : *b - *a;
      if (!R.card_alias_distance || d < *R.card_alias_distance) R.card_alias_distance = d;
    };
    for (const FillFile& f : files) {
      if (Stopped(stop)) break;
      probes::Fd fd(::openat(dir.get(), f.name.c_str(), O_RDONLY | O_DIRECT | O_NOFOLLOW | O_CLOEXEC));
      if (!fd.valid() && errno == EINVAL) {
        if (R.direct_io)
          R.notes.push_back("O_DIRECT refused on " + opt.directory +
                            ": reads are buffered, after fdatasync and dropping the page cache");
        R.direct_io = false;
        fd.reset(::openat(dir.get(), f.name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (fd.valid()) probes::DropCache(fd.get(), 0, f.bytes);
      }
      if (!fd.valid()) {
        R.notes.push_back(Errno("cannot open " + f.name + " to read it back", errno));
        bad_all(f.offset, f.offset + f.bytes);
        continue;
      }
      for (std::uint64_t done = 0; done < f.bytes && !Stopped(stop);) {
        const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, f.bytes - done));
        probes::OpResult r = probes::TimedPread(fd.get(), buf.data(), chunk, done);
        if (r.error == 0) {
          for (std::size_t i = 0; i < chunk; i += kFillBlock)
            tally(f.offset + done + i, ClassifyFillBlock(buf.data() + i, R.run_id, f.offset + done + i));
        } else {
          // Block by block, so one unreadable block does not hide the 255 beside it.
          for (std::size_t i = 0; i < chunk; i += kFillBlock) {
            probes::OpResult b = probes::TimedPread(fd.get(), buf.data(), kFillBlock, done + i);
            tally(f.offset + done + i,
                  b.error == 0 ? ClassifyFillBlock(buf.data(), R.run_id, f.offset + done + i) : read_error);
          }
        }
        done += chunk;
        if (progress) progress("verifying", f.offset + done, R.written_bytes, Since(t_verify));
      }
    }
    R.verify_seconds = Since(t_verify);
    const std::optional<std::uint64_t> sectors_after = ReadSectors(opt.sysfs, R.disk);
    if (sectors_before && sectors_after && *sectors_after >= *sectors_before) {
      R.device_read_bytes = (*sectors_after - *sectors_before) * parsers::kSectorBytes;
      if (*R.device_read_bytes < R.verified_bytes)
        R.notes.push_back("the disk counted " + Mib(*R.device_read_bytes) + " read while " + Mib(R.verified_bytes) +
                          " were verified: some reads may have been served from a cache, not the card");
    }
    if (Stopped(stop)) {
      R.interrupted = true;
      R.stop_reason = "interrupted while verifying, after " + Mib(R.verified_bytes);
    }
  }

  // Removal, whatever happened above.
  std::string remove_error;
  for (const FillFile& f : files)
    if (::unlinkat(dir.get(), f.name.c_str(), 0) != 0 && errno != ENOENT && remove_error.empty())
      remove_error = Errno("cannot remove " + util::JoinPath(R.check_directory, f.name), errno);
  dir.reset();
  // On a card that wrapped, the directory's own block may be fill data by now (EBADMSG: ext4's
  // checksum of it fails) while its files are gone: say which part was left.
  if (::unlinkat(parent.get(), kCapacityDirName, AT_REMOVEDIR) != 0 && remove_error.empty())
    remove_error = Errno("the fill files are removed, but not their directory " + R.check_directory, errno);
  R.removed = remove_error.empty();
  R.remove_error = remove_error;
  R.elapsed_seconds = Since(t_start);
  return true;
}

}  // namespace diskprobe::bench
