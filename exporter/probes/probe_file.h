#pragma once
// The write probes' probe file: the only thing the exporter ever writes.
//
// Safety rules (the exporter must never write anywhere but its own file): the directory must be a real directory (not a
// symlink, not a device); the file is created exclusively (O_CREAT|O_EXCL), mode 0600, opened with O_NOFOLLOW, checked
// to be a regular file with one link, owned by us, and to carry our header; a file that is not ours is never
// overwritten. Free space must stay above a floor.
//
// Layout: block 0 is a header (magic, geometry, the write budget's day and bytes used that day,
// so the budget survives restarts); blocks 1..N-1 are data blocks. Every data block written starts
// with a block header followed by fresh random bytes:
//   bytes 0-7 "DPBLOCK2", 8-15 the block's own file offset, 16-23 a sequence number (one per block
//   written, increasing), 24-27 CRC32C (Castagnoli, as iSCSI/ext4 use it) of the whole block with
//   these four bytes zeroed, 28-31 zero.
// The verify probe reads blocks back and checks all of it: a card that drops a write returns the
// block's older contents (valid CRC, wrong sequence); one that corrupts data fails the CRC.
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "probes/io.h"

namespace diskprobe::probes {

inline constexpr const char* kProbeFileName = "diskprobe_exporter.probe";
inline constexpr std::size_t kProbeBlock = 4096;

struct ProbeFileHeader {
  std::uint64_t file_size = 0;
  std::uint64_t budget_day = 0;   // UTC days since 1970-01-01
  std::uint64_t budget_used = 0;  // bytes written by the probes into this file that day
  std::uint64_t sequence = 0;     // data blocks written so far
};

struct ProbeFileOptions {
  std::string directory;
  bool create_directory = false;  // create it (0700) when missing: the state directory only
  std::uint64_t size = 16 << 20;
  std::uint64_t free_space_floor = 256ull << 20;
  double free_space_floor_ratio = 0.05;
  std::string sysfs = "/sys";  // to resolve the directory's disk
  // The file's name in `directory`: the probes' kProbeFileName, or the bench's own file (a bench
  // run must not resize or rewrite the file the exporter's probes are using).
  std::string file_name = kProbeFileName;
  // The disk the directory must be on ("": any). Checked before anything is created: a directory
  // now on another disk is refused (EINVAL), one whose disk has vanished while its filesystem is
  // still mounted (a block device number that sysfs no longer has) is refused with ENODEV.
  std::string expected_disk;
};

// Free space below which write probes do not start: the smaller of floor and ratio x total.
std::uint64_t FreeSpaceFloor(std::uint64_t total_bytes, std::uint64_t floor, double ratio);

// Resolves a filesystem's st_dev to the whole disk that holds it through
// <sysfs>/dev/block/MAJ:MIN (a partition's parent directory is its disk). Returns "" when the
// device has no block device (tmpfs, overlayfs upper layer on an anonymous device, NFS).
std::string DiskOfDev(const std::string& sysfs, dev_t dev);

// Checks that `dir` may hold a probe file: it must be a real directory, not a symlink and not a
// device, and no component of its path may be a symlink either (a symlinked parent moves the
// writes as surely as a symlinked directory). Returns "" when it may (or when it, or a parent,
// does not exist yet), else the refusal for the log. Advisory (lstat): ProbeFile::Open enforces
// the same with OpenDirectoryNoFollow.
std::string CheckProbeDirectory(const std::string& dir);

// Opens directory `dir` for reading without following a symlink in any component:
// openat2(RESOLVE_NO_SYMLINKS) where the kernel (5.6+) and the seccomp filter allow it, else one
// openat(O_PATH|O_DIRECTORY|O_NOFOLLOW) per component. `create`: missing components are made
// (parents 0755, the last 0700) with mkdirat in the directory just opened, so creation cannot be
// redirected either. On failure returns an invalid Fd, *error a sentence naming the component
// ("probe directory /a/b/c: its parent /a/b is a symlink; refusing ...") and *err_no its errno
// (EINVAL for a symlink or a non-directory component).
Fd OpenDirectoryNoFollow(const std::string& dir, bool create, std::string* error, int* err_no);

class ProbeFile {
 public:
  // Opens <directory>/diskprobe_exporter.probe, creating and filling it when missing. On failure
  // returns null with *error set to a sentence for the log ("... is a symlink; refusing") and
  // *err_no to the errno behind it (EINVAL for a policy refusal, EBUSY when another ProbeFile
  // holds the file: each open file is flock(LOCK_EX)ed for its lifetime, ENODEV when the disk of
  // opt.expected_disk is gone). *bytes_written gets what the
  // creation wrote (count it against the budget).
  static std::unique_ptr<ProbeFile> Open(const ProbeFileOptions& opt, std::string* error, int* err_no,
                                         std::uint64_t* bytes_written);

  const std::string& path() const { return path_; }
  const std::string& disk() const { return disk_; }  // "" when unresolvable
  bool direct_io() const { return direct_; }
  int io_fd() const { return io_fd_.get(); }      // O_DIRECT|O_DSYNC (or O_DSYNC fallback)
  int sync_fd() const { return sync_fd_.get(); }  // buffered, for write + fdatasync
  std::uint64_t data_blocks() const { return header_.file_size / kProbeBlock - 1; }
  ProbeFileHeader& header() { return header_; }

  // Free bytes on the filesystem and the floor they must stay above; false when statvfs fails.
  bool FreeSpace(std::uint64_t* avail, std::uint64_t* floor) const;

  // Fills `buf` (kProbeBlock bytes, aligned) as data block `index` with the next sequence number.
  void StampBlock(unsigned char* buf, std::uint64_t index);
  // Records that the blocks stamped for [offset, offset+len) reached the file (the write
  // returned success): the verify probe will expect exactly them there.
  void CommitWritten(std::uint64_t offset, std::uint64_t len);
  // The most recently written blocks, newest first: (block index, sequence).
  const std::deque<std::pair<std::uint64_t, std::uint64_t>>& recent() const { return recent_; }

  // Writes the header block (O_DSYNC). Returns 0 or errno; the caller counts kProbeBlock bytes.
  int SaveHeader(unsigned char* aligned_block);

 private:
  ProbeFile() = default;
  std::string path_, disk_;
  Fd dir_fd_, io_fd_, sync_fd_;
  bool direct_ = true;
  ProbeFileHeader header_;
  std::uint64_t free_floor_ = 0;
  double free_ratio_ = 0;
  std::uint64_t rng_state_ = 0;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> stamped_;  // stamped, not yet written
  std::deque<std::pair<std::uint64_t, std::uint64_t>> recent_;   // written, newest first
};

// CRC32C (Castagnoli) of `len` bytes.
std::uint32_t Crc32c(const unsigned char* data, std::size_t len);

// Checks a data block read back from `index`. `expected_sequence`: the sequence last written
// there, when known. Returns "" when the block is intact, else what is wrong ("bad magic",
// "offset field 8192, expected 12288", "CRC32C mismatch", "sequence 41, expected 57 (a lost
// write)").
std::string CheckBlock(const unsigned char* block, std::uint64_t index, std::optional<std::uint64_t> expected_sequence);

// Encodes / decodes block 0 (format version 2). Decode returns false when the block is not a
// diskprobe header; *version (if given) receives the version of a diskprobe header of any version.
void EncodeHeader(const ProbeFileHeader& h, unsigned char* block);
bool DecodeHeader(const unsigned char* block, ProbeFileHeader* h, std::uint64_t* version = nullptr);

}  // namespace diskprobe::probes
