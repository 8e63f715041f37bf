#include "probes/probe_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <vector>

#include <boost/crc.hpp>

#include "util/file.h"
#include "util/strings.h"

namespace diskprobe::probes {
namespace {

constexpr char kFileMagic[16] = {'D', 'I', 'S', 'K', 'P', 'R', 'O', 'B', 'E', '-', 'F', 'I', 'L', 'E', '1', 0};
constexpr char kBlockMagic[8] = {'D', 'P', 'B', 'L', 'O', 'C', 'K', '2'};
constexpr std::uint64_t kFormatVersion = 2;  // 1: blocks without CRC32C (replaced on sight)
constexpr std::size_t kRecentMax = 512;

using util::GetU64;
using util::PutU64;

// xorshift64*: fast, and the data only has to be incompressible and different every write.
std::uint64_t NextRandom(std::uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

std::string Errno(const std::string& what, int e) { return what + ": " + std::strerror(e); }

// Splits a path into its components, without empty ones and ".".
std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string c = path.substr(i, j - i);
    if (!c.empty() && c != ".") out.push_back(std::move(c));
    i = j + 1;
  }
  return out;
}

// The prefix of `path` up to and including component `n` (0-based), for messages.
std::string Prefix(const std::string& path, const std::vector<std::string>& comps, std::size_t n) {
  std::string p = path.starts_with('/') ? "" : ".";
  for (std::size_t i = 0; i <= n && i < comps.size(); ++i) p += "/" + comps[i];
  return p;
}

// openat2(2) with RESOLVE_NO_SYMLINKS (Linux 5.6): the kernel refuses a symlink in any component.
// -1 with errno ENOSYS where the kernel or a seccomp filter does not have it.
int OpenAt2NoSymlinks(const std::string& dir) {
#ifdef SYS_openat2
  struct open_how how {};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, AT_FDCWD, dir.c_str(), &how, sizeof how);
  if (fd < 0 && (errno == EPERM || errno == EINVAL || errno == E2BIG)) errno = ENOSYS;  // filtered or too old
  return static_cast<int>(fd);
#else
  (void)dir;
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

Fd OpenDirectoryNoFollow(const std::string& dir, bool create, std::string* error, int* err_no) {
  if (!create) {
    int fd = OpenAt2NoSymlinks(dir);
    if (fd >= 0) return Fd(fd);
    // ENOSYS: the walk below does the same. Any other failure: the walk names the component.
  }
  const std::vector<std::string> comps = Components(dir);
  // The first component of an absolute path is opened by its absolute name ("/tmp") rather than
  // relative to an open "/": the same lookup, and under qemu-user with a library prefix (-L, the
  // cross builds' unit tests) an open "/" is the prefix's root, not the machine's.
  const bool absolute = dir.starts_with('/');
  Fd cur;
  if (!absolute || comps.empty()) {
    cur.reset(::open(absolute ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!cur.valid()) {
      *err_no = errno;
      *error = Errno("probe directory " + dir, errno);
      return Fd();
    }
  }
  for (std::size_t i = 0; i < comps.size(); ++i) {
    const bool first_of_absolute = !cur.valid();
    const int at = first_of_absolute ? AT_FDCWD : cur.get();
    const std::string c = first_of_absolute ? "/" + comps[i] : comps[i];
    const bool last = i + 1 == comps.size();
    int next = ::openat(at, c.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create) {
      // Parents as mkdir -p makes them; the state directory itself private to the service.
      if (::mkdirat(at, c.c_str(), last ? 0700 : 0755) != 0 && errno != EEXIST) {
        *err_no = errno;
        *error = Errno("cannot create probe directory " + Prefix(dir, comps, i), errno);
        return Fd();
      }
      next = ::openat(at, c.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) {
      const int e = errno;
      struct stat st {};
      const bool is_link = ::fstatat(at, c.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      *err_no = EINVAL;
      if (is_link && last) {
        *error = "probe directory " + dir + " is a symlink; refusing (give the real directory)";
      } else if (is_link) {
        *error = "probe directory " + dir + ": its parent " + Prefix(dir, comps, i) +
                 " is a symlink; refusing (give the real path: the probes never follow symlinks)";
      } else if (e == ENOTDIR) {
        *error = "probe directory " + dir + ": " + Prefix(dir, comps, i) + " is not a directory; refusing";
      } else {
        *err_no = e;
        *error = Errno("probe directory " + Prefix(dir, comps, i), e);
      }
      return Fd();
    }
    cur.reset(next);
  }
  // A readable descriptor of the directory reached (O_PATH ones cannot be read or locked).
  Fd out(::openat(cur.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!out.valid()) {
    *err_no = errno;
    *error = Errno("cannot open probe directory " + dir, errno);
  }
  return out;
}

std::string CheckProbeDirectory(const std::string& dir) {
  // Every component, not just the last: a symlinked parent would move the writes elsewhere too.
  const std::vector<std::string> comps = Components(dir);
  for (std::size_t i = 0; i + 1 < comps.size(); ++i) {
    const std::string p = Prefix(dir, comps, i);
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return "";
    if (S_ISLNK(st.st_mode))
      return "probe directory " + dir + ": its parent " + p +
             " is a symlink; refusing (give the real path: the probes never follow symlinks)";
    if (!S_ISDIR(st.st_mode)) return "probe directory " + dir + ": " + p + " is not a directory; refusing";
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) return "probe directory " + dir + " is a symlink; refusing (give the real directory)";
  if (S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode))
    return "probe directory " + dir + " is a device; refusing: the probes never write to a device";
  if (!S_ISDIR(st.st_mode)) return "probe directory " + dir + " is not a directory; refusing";
  return "";
}

std::uint64_t FreeSpaceFloor(std::uint64_t total_bytes, std::uint64_t floor, double ratio) {
  auto by_ratio = static_cast<std::uint64_t>(static_cast<double>(total_bytes) * ratio);
  return by_ratio < floor ? by_ratio : floor;
}

std::string DiskOfDev(const std::string& sysfs, dev_t dev) {
  const std::string link =
      util::JoinPath(sysfs, "dev/block/" + std::to_string(major(dev)) + ":" + std::to_string(minor(dev)));
  std::error_code ec;
  std::filesystem::path target = std::filesystem::canonical(link, ec);
  if (ec) return "";
  if (std::filesystem::exists(target / "partition", ec)) return target.parent_path().filename().string();
  return target.filename().string();
}

std::uint32_t Crc32c(const unsigned char* data, std::size_t len) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data, len);
  return crc.checksum();
}

namespace {
std::uint32_t BlockCrc(const unsigned char* block) {
  unsigned char copy[kProbeBlock];
  std::memcpy(copy, block, kProbeBlock);
  std::memset(copy + 24, 0, 4);
  return Crc32c(copy, kProbeBlock);
}
}  // namespace

std::string CheckBlock(const unsigned char* block, std::uint64_t index,
                       std::optional<std::uint64_t> expected_sequence) {
  if (std::memcmp(block, kBlockMagic, sizeof kBlockMagic) != 0) return "bad block magic";
  std::uint64_t off = GetU64(block + 8);
  if (off != index * kProbeBlock)
    return "offset field " + std::to_string(off) + ", expected " + std::to_string(index * kProbeBlock);
  std::uint32_t stored = static_cast<std::uint32_t>(GetU64(block + 24) & 0xffffffffu);
  if (stored != BlockCrc(block)) return "CRC32C mismatch";
  std::uint64_t seq = GetU64(block + 16);
  if (expected_sequence && seq != *expected_sequence)
    return "sequence " + std::to_string(seq) + ", expected " + std::to_string(*expected_sequence) +
           (seq < *expected_sequence ? " (a lost write)" : "");
  return "";
}

void EncodeHeader(const ProbeFileHeader& h, unsigned char* block) {
  std::memset(block, 0, kProbeBlock);
  std::memcpy(block, kFileMagic, sizeof kFileMagic);
  PutU64(block + 16, kFormatVersion);
  PutU64(block + 24, kProbeBlock);
  PutU64(block + 32, h.file_size);
  PutU64(block + 40, h.budget_day);
  PutU64(block + 48, h.budget_used);
  PutU64(block + 56, h.sequence);
}

bool DecodeHeader(const unsigned char* block, ProbeFileHeader* h, std::uint64_t* version) {
  if (std::memcmp(block, kFileMagic, sizeof kFileMagic) != 0) return false;
  if (version != nullptr) *version = GetU64(block + 16);
  if (GetU64(block + 16) < 1 || GetU64(block + 16) > kFormatVersion || GetU64(block + 24) != kProbeBlock) return false;
  h->file_size = GetU64(block + 32);
  h->budget_day = GetU64(block + 40);
  h->budget_used = GetU64(block + 48);
  h->sequence = GetU64(block + 56);
  return true;
}

void ProbeFile::StampBlock(unsigned char* buf, std::uint64_t index) {
  for (std::size_t i = 0; i < kProbeBlock; i += 8) PutU64(buf + i, NextRandom(&rng_state_));
  std::memcpy(buf, kBlockMagic, sizeof kBlockMagic);
  PutU64(buf + 8, index * kProbeBlock);
  PutU64(buf + 16, ++header_.sequence);
  PutU64(buf + 24, 0);
  PutU64(buf + 24, BlockCrc(buf));
  stamped_.emplace_back(index, header_.sequence);
  if (stamped_.size() > kRecentMax) stamped_.pop_front();
}

void ProbeFile::CommitWritten(std::uint64_t offset, std::uint64_t len) {
  const std::uint64_t first = offset / kProbeBlock, last = (offset + len) / kProbeBlock;
  for (auto it = stamped_.begin(); it != stamped_.end();) {
    if (it->first >= first && it->first < last) {
      // A block written again replaces its older record.
      for (auto r = recent_.begin(); r != recent_.end(); ++r)
        if (r->first == it->first) {
          recent_.erase(r);
          break;
        }
      recent_.push_front(*it);
      it = stamped_.erase(it);
    } else {
      ++it;
    }
  }
  while (recent_.size() > kRecentMax) recent_.pop_back();
  stamped_.clear();  // stamps of a failed write are void
}

int ProbeFile::SaveHeader(unsigned char* aligned_block) {
  EncodeHeader(header_, aligned_block);
  OpResult r = TimedPwrite(io_fd_.get(), aligned_block, kProbeBlock, 0);
  if (r.error == 0 && !direct_) DropCache(io_fd_.get(), 0, kProbeBlock);
  return r.error;
}

bool ProbeFile::FreeSpace(std::uint64_t* avail, std::uint64_t* floor) const {
  struct statvfs vfs {};
  if (::fstatvfs(dir_fd_.get(), &vfs) != 0) return false;
  *avail = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  *floor = FreeSpaceFloor(static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize, free_floor_, free_ratio_);
  return true;
}

std::unique_ptr<ProbeFile> ProbeFile::Open(const ProbeFileOptions& opt, std::string* error, int* err_no,
                                           std::uint64_t* bytes_written) {
  *bytes_written = 0;
  *err_no = EINVAL;
  const std::string& dir = opt.directory;
  if (std::string refusal = CheckProbeDirectory(dir); !refusal.empty()) {
    *error = refusal;
    return nullptr;
  }

  std::unique_ptr<ProbeFile> f(new ProbeFile());
  f->free_floor_ = opt.free_space_floor;
  f->free_ratio_ = opt.free_space_floor_ratio;
  // The check above gives the clearer message; this open is the one that counts (no symlink in
  // any component, whatever changed since).
  f->dir_fd_ = OpenDirectoryNoFollow(dir, opt.create_directory, error, err_no);
  if (!f->dir_fd_.valid()) return nullptr;
  *err_no = EINVAL;
  struct stat dst {};
  ::fstat(f->dir_fd_.get(), &dst);
  f->disk_ = DiskOfDev(opt.sysfs, dst.st_dev);
  f->path_ = util::JoinPath(dir, opt.file_name);
  if (!opt.expected_disk.empty() && f->disk_ != opt.expected_disk) {
    // Checked before anything is created or written: a file made here would land on another disk,
    // or on a filesystem whose disk is gone (where a lookup and an exclusive create disagree).
    const std::string devno = std::to_string(major(dst.st_dev)) + ":" + std::to_string(minor(dst.st_dev));
    if (f->disk_.empty() && major(dst.st_dev) != 0) {
      *err_no = ENODEV;
      *error = "the disk that held probe directory " + dir + " (block device " + devno + ", " + opt.expected_disk +
               ") is gone while its filesystem is still mounted there; not touching the probe file";
    } else {
      *error = "probe directory " + dir + " is now on disk \"" + f->disk_ + "\", not " + opt.expected_disk +
               "; not touching the probe file";
    }
    return nullptr;
  }
  std::random_device rd;
  f->rng_state_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(MonotonicNs());
  if (f->rng_state_ == 0) f->rng_state_ = 0x9e3779b97f4a7c15ull;

  const std::uint64_t size = opt.size / kProbeBlock * kProbeBlock;
  AlignedBuffer block(kProbeBlock, kProbeBlock);
  bool created = false;
  std::optional<ProbeFileHeader> carry;
  // One prober per file: a second ProbeFile on the same file (a thread of this process still
  // finishing on a disk that went away while a new one starts, or a second exporter) is refused
  // instead of both writing and counting the same blocks. Taken before the header is read.
  const auto lock = [&](int lfd) {
    if (::flock(lfd, LOCK_EX | LOCK_NB) == 0) return true;
    const int e = errno;
    *err_no = e == EWOULDBLOCK ? EBUSY : e;
    *error = e == EWOULDBLOCK ? "probe file " + f->path_ +
                                    " is in use by another prober (another diskprobe_exporter, or a probe thread "
                                    "still finishing on a disk that went away); not opening it twice"
                              : Errno("cannot lock probe file " + f->path_, e);
    return false;
  };
  // Twice at most: a file that appears between the lookup and the exclusive create is looked at again.
  for (int attempt = 0;; ++attempt) {
    int fd = ::openat(f->dir_fd_.get(), opt.file_name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ELOOP) {
      *error = "probe file " + f->path_ + " is a symlink; refusing to follow it";
      return nullptr;
    }
    if (fd >= 0) {
      Fd existing(fd);
      struct stat fst {};
      ::fstat(fd, &fst);
      if (!S_ISREG(fst.st_mode)) {
        *error = "probe file " + f->path_ + " is not a regular file; refusing";
        return nullptr;
      }
      if (fst.st_nlink != 1 || fst.st_uid != ::geteuid()) {
        *error = "probe file " + f->path_ + " has other links or another owner; refusing to write to it";
        return nullptr;
      }
      if (!lock(fd)) return nullptr;
      ProbeFileHeader h;
      std::uint64_t version = 0;
      ssize_t n = ::pread(fd, block.data(), kProbeBlock, 0);
      if (n != static_cast<ssize_t>(kProbeBlock) || !DecodeHeader(block.data(), &h, &version)) {
        *error = "file " + f->path_ + " exists and is not a diskprobe probe file; refusing to overwrite it";
        return nullptr;
      }
      if (version != kFormatVersion || h.file_size != size || static_cast<std::uint64_t>(fst.st_size) != size) {
        // Ours, with another size: replace it, keeping the day's budget use.
        carry = h;
        if (::unlinkat(f->dir_fd_.get(), opt.file_name.c_str(), 0) != 0) {
          *err_no = errno;
          *error = Errno("cannot replace probe file " + f->path_, errno);
          return nullptr;
        }
      } else {
        f->header_ = h;
        f->sync_fd_ = std::move(existing);
      }
    } else if (errno != ENOENT) {
      *err_no = errno;
      *error = Errno("cannot open probe file " + f->path_, errno);
      return nullptr;
    }

    if (!f->sync_fd_.valid()) {
      std::uint64_t avail = 0, floor = 0;
      if (f->FreeSpace(&avail, &floor) && avail < size + floor) {
        *err_no = ENOSPC;
        *error = "not enough free space in " + dir + " for a " + std::to_string(size) + "-byte probe file above the " +
                 std::to_string(floor) + "-byte floor (" + std::to_string(avail) + " bytes free)";
        return nullptr;
      }
      fd = ::openat(f->dir_fd_.get(), opt.file_name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0 && errno == EEXIST && attempt == 0) continue;
      if (fd < 0 && errno == EEXIST) {
        *err_no = EEXIST;
        *error = "probe file " + f->path_ +
                 " was missing, then existed when created, twice: something else is creating and removing it; refusing";
        return nullptr;
      }
      if (fd < 0) {
        *err_no = errno;
        *error = Errno("cannot create probe file " + f->path_, errno);
        return nullptr;
      }
      f->sync_fd_.reset(fd);
      if (!lock(fd)) return nullptr;
      f->header_ = ProbeFileHeader{size, 0, 0, 0};
      if (carry) {
        f->header_.budget_day = carry->budget_day;
        f->header_.budget_used = carry->budget_used;
      }
      created = true;
    }
    break;
  }

  // The O_DIRECT|O_DSYNC descriptor is a reopen of the same inode through /proc/self/fd, so no
  // path lookup can swap the file in between.
  const std::string self = "/proc/self/fd/" + std::to_string(f->sync_fd_.get());
  int io = ::open(self.c_str(), O_RDWR | O_DIRECT | O_DSYNC | O_CLOEXEC);
  if (io < 0 && errno == EINVAL) {
    f->direct_ = false;  // tmpfs, some FUSE: buffered + O_DSYNC, page cache dropped around reads
    io = ::open(self.c_str(), O_RDWR | O_DSYNC | O_CLOEXEC);
  }
  if (io < 0) {
    *err_no = errno;
    *error = Errno("cannot reopen probe file " + f->path_, errno);
    return nullptr;
  }
  f->io_fd_.reset(io);
  struct stat a {
  }, b{};
  ::fstat(f->sync_fd_.get(), &a);
  ::fstat(io, &b);
  if (a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
    *error = "probe file " + f->path_ + " changed while it was opened; refusing";
    return nullptr;
  }

  if (created) {
    f->stamped_.clear();
    // Fill the file with data so later probe writes overwrite allocated, written blocks (no
    // extent conversion or allocation in the timed path, and no metadata writes per probe).
    const std::size_t chunk = 256 * kProbeBlock;
    AlignedBuffer buf(chunk, kProbeBlock);
    for (std::uint64_t off = kProbeBlock; off < size; off += chunk) {
      std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, size - off));
      for (std::size_t i = 0; i < len; i += kProbeBlock) f->StampBlock(buf.data() + i, (off + i) / kProbeBlock);
      OpResult r = TimedPwrite(io, buf.data(), len, off);
      if (r.error != 0) {
        *err_no = r.error;
        *error = Errno("cannot fill probe file " + f->path_, r.error);
        ::unlinkat(f->dir_fd_.get(), opt.file_name.c_str(), 0);
        return nullptr;
      }
      *bytes_written += len;
    }
    f->stamped_.clear();  // the fill is not a probe write: verify samples it at random, unexpected
    int e = f->SaveHeader(block.data());
    if (e != 0) {
      *err_no = e;
      *error = Errno("cannot write probe file header " + f->path_, e);
      ::unlinkat(f->dir_fd_.get(), opt.file_name.c_str(), 0);
      return nullptr;
    }
    *bytes_written += kProbeBlock;
    if (!f->direct_) DropCache(io, 0, size);
  }
  *err_no = 0;
  return f;
}

}  // namespace diskprobe::probes
