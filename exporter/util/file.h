#pragma once
// Small, allocation-light readers for sysfs/procfs/debugfs attribute files.
#include <string>
#include <string_view>
#include <unordered_map>

namespace diskprobe::util {

// Result of reading a whole file. `error` is 0 on success, else the errno of open/read
// (ENOENT: the attribute does not exist on this kernel/device; EACCES/EPERM: no permission).
struct FileContent {
  std::string text;
  int error = 0;
  bool ok() const { return error == 0; }
};

// Reads a whole (small) file with open/read/close. Never throws for I/O errors; files larger
// than `max_bytes` are truncated (sysfs attributes are at most one page, 4096 bytes).
FileContent ReadFile(const std::string& path, std::size_t max_bytes = 65536);

// Result of ReadRegularFile: the text, or `error`, a message without the path ("" on success).
struct RegularFileContent {
  std::string text;
  std::string error;
  bool ok() const { return error.empty(); }
};

// Reads a file a user names on the command line (a configuration): only a regular file, at most
// `max_bytes`, so that no such file can block or exhaust the process. Anything else is refused
// before it is opened (stat(2) follows symbolic links): a FIFO would block open(2) and read(2)
// until a writer comes, /dev/zero never ends, and opening a device can have side effects (a
// watchdog starts counting). The open itself is O_NONBLOCK|O_NOCTTY and the type is checked again
// with fstat(2), so a file swapped for a FIFO between the two checks cannot block either. A file
// larger than `max_bytes` is refused, never truncated. Files of kernel pseudo-filesystems
// (procfs, sysfs, debugfs, tracefs, securityfs, cgroupfs, bpffs, efivarfs, pstore, configfs, by
// statfs(2) f_type) look regular but are refused unread: reading /proc/kmsg consumes syslog
// records. Errors:
//   "not a regular file (fifo)" (or directory, character device, block device, socket),
//   "not a regular file (a procfs file; not read)" (or sysfs, debugfs ...),
//   "cannot read: <strerror>" (stat, open or read failed),
//   "file is larger than <max_bytes> bytes".
RegularFileContent ReadRegularFile(const std::string& path, std::size_t max_bytes);

// The kernel pseudo-filesystem `path` is on ("procfs", "sysfs", "debugfs" ... as listed for
// ReadRegularFile), or "" for an ordinary filesystem or when statfs(2) fails. Nothing is opened.
std::string PseudoFilesystemOf(const std::string& path);

// Reads a sysfs/procfs attribute with a single read(2) of at most 4096 bytes (open, read, close:
// three system calls). sysfs returns a whole attribute, at most one page, in the first read
// (Documentation/filesystems/sysfs.rst), so no second read for EOF is needed.
FileContent ReadAttribute(const std::string& path);

// Attributes read at every scrape, kept open between reads. sysfs makes an attribute's value
// afresh on every read from offset 0 (Documentation/filesystems/sysfs.rst: to read a new value,
// seek back to 0 and read again), so one pread(2) replaces open, read and close. Only files on
// sysfs are kept open: any other file (fixture trees, a file replaced by rename) is opened anew
// for every read, as ReadAttribute does. A kept file that fails to read (ENODEV once its device
// or filesystem is gone) is closed and the path opened again, so results and errors are those of
// ReadAttribute. Not thread-safe: one per collector (scrapes are serialised).
class SysfsAttributes {
 public:
  SysfsAttributes() = default;
  ~SysfsAttributes();
  SysfsAttributes(const SysfsAttributes&) = delete;
  SysfsAttributes& operator=(const SysfsAttributes&) = delete;

  // As ReadAttribute(path).
  FileContent Read(const std::string& path);
  // Closes the files not read since the previous call (devices and filesystems gone).
  void CloseUnread();

 private:
  struct Open {
    int fd;
    bool read;
  };
  std::unordered_map<std::string, Open> open_;
};

// Joins path components with exactly one '/' between them.
std::string JoinPath(std::string_view a, std::string_view b);

}  // namespace diskprobe::util
