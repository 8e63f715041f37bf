#include "probes/probe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>

#include <boost/crc.hpp>

#include "util/file.h"

namespace diskprobe::probes {
namespace {

constexpr char kFileMagic[16] = {'D', 'I', 'S', 'K', 'P', 'R', 'O', 'B', 'E', '-', 'F', 'I', 'L', 'E', '1', 0};
constexpr char kBlockMagic[8] = {'D', 'P', 'B', 'L', 'O', 'C', 'K', '2'};
constexpr std::uint64_t kFormatVersion = 2;  // 1: blocks without CRC32C (replaced on sight)
constexpr std::size_t kRecentMax = 512;

void PutU64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
std::uint64_t GetU64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

// xorshift64*: fast, and the data only has to be incompressible and different every write.
std::uint64_t NextRandom(std::uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

std::string Errno(const std::string& what, int e) { return what + ": " + std::strerror(e); }

bool MakeStateDirectory(const std::string& dir, std::string* error, int* err_no) {
  std::error_code ec;
  std::filesystem::path p(dir);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *err_no = errno;
    *error = Errno("cannot create probe directory " + dir, errno);
    return false;
  }
  return true;
}

}  // namespace

std::string CheckProbeDirectory(const std::string& dir) {
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
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT && opt.create_directory) {
      if (!MakeStateDirectory(dir, error, err_no)) return nullptr;
      if (::lstat(dir.c_str(), &st) != 0) {
        *err_no = errno;
        *error = Errno("probe directory " + dir, errno);
        return nullptr;
      }
    } else {
      *err_no = errno;
      *error = Errno("probe directory " + dir, errno);
      return nullptr;
    }
  }
  if (std::string refusal = CheckProbeDirectory(dir); !refusal.empty()) {
    *error = refusal;
    return nullptr;
  }

  std::unique_ptr<ProbeFile> f(new ProbeFile());
  f->free_floor_ = opt.free_space_floor;
  f->free_ratio_ = opt.free_space_floor_ratio;
  f->dir_fd_.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!f->dir_fd_.valid()) {
    *err_no = errno;
    *error = Errno("cannot open probe directory " + dir, errno);
    return nullptr;
  }
  struct stat dst {};
  ::fstat(f->dir_fd_.get(), &dst);
  f->disk_ = DiskOfDev(opt.sysfs, dst.st_dev);
  f->path_ = util::JoinPath(dir, opt.file_name);
  std::random_device rd;
  f->rng_state_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(MonotonicNs());
  if (f->rng_state_ == 0) f->rng_state_ = 0x9e3779b97f4a7c15ull;

  const std::uint64_t size = opt.size / kProbeBlock * kProbeBlock;
  AlignedBuffer block(kProbeBlock, kProbeBlock);
  bool created = false;
  std::optional<ProbeFileHeader> carry;
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
    if (fd < 0) {
      *err_no = errno;
      *error = Errno("cannot create probe file " + f->path_, errno);
      return nullptr;
    }
    f->sync_fd_.reset(fd);
    f->header_ = ProbeFileHeader{size, 0, 0, 0};
    if (carry) {
      f->header_.budget_day = carry->budget_day;
      f->header_.budget_used = carry->budget_used;
    }
    created = true;
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
