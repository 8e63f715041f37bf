#include "util/file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace diskprobe::util {

FileContent ReadFile(const std::string& path, std::size_t max_bytes) {
  FileContent out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  char buf[4096];
  while (out.text.size() < max_bytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.error = errno;
      break;
    }
    if (n == 0) break;
    out.text.append(buf, static_cast<std::size_t>(n));
  }
  if (out.text.size() > max_bytes) out.text.resize(max_bytes);
  ::close(fd);
  return out;
}

namespace {

// "" for a regular file, else what it is, for "not a regular file (<kind>)".
const char* NotRegular(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  if (S_ISSOCK(mode)) return "socket";
  return "unknown file type";
}

// "" for an ordinary filesystem, else the kernel pseudo-filesystem `fs_type` is. Their files
// claim to be regular, but reading one is an operation: /proc/kmsg hands each syslog record to
// one reader only (a config check would consume them), debugfs and tracefs files can block or
// trigger work, and none of them is a configuration someone wrote.
const char* PseudoFilesystem(std::uint32_t fs_type) {
  switch (fs_type) {
    case PROC_SUPER_MAGIC: return "procfs";
    case SYSFS_MAGIC: return "sysfs";
    case DEBUGFS_MAGIC: return "debugfs";
    case TRACEFS_MAGIC: return "tracefs";
    case SECURITYFS_MAGIC: return "securityfs";
    case CGROUP_SUPER_MAGIC: return "cgroupfs";
    case CGROUP2_SUPER_MAGIC: return "cgroup2fs";
    case BPF_FS_MAGIC: return "bpffs";
    case EFIVARFS_MAGIC: return "efivarfs";
    case PSTOREFS_MAGIC: return "pstore";
    case 0x62656570: return "configfs";  // CONFIGFS_MAGIC is not in linux/magic.h
    default: return "";
  }
}

}  // namespace

std::string PseudoFilesystemOf(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "";
  return PseudoFilesystem(static_cast<std::uint32_t>(fs.f_type));
}

RegularFileContent ReadRegularFile(const std::string& path, std::size_t max_bytes) {
  RegularFileContent out;
  auto cannot = [&](const char* what) {
    out.text.clear();
    out.error = std::string(what) + std::strerror(errno);
    return out;
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return cannot("cannot read: ");
  if (const char* kind = NotRegular(st.st_mode); *kind != '\0') {
    out.error = std::string("not a regular file (") + kind + ")";
    return out;
  }
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return cannot("cannot read: ");
  if (const char* pseudo = PseudoFilesystem(static_cast<std::uint32_t>(fs.f_type)); *pseudo != '\0') {
    out.error = std::string("not a regular file (a ") + pseudo + " file; not read)";
    return out;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return cannot("cannot read: ");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0 || ::fstatfs(fd, &fs) != 0) return cannot("cannot read: ");
  if (const char* kind = NotRegular(st.st_mode); *kind != '\0') {
    out.error = std::string("not a regular file (") + kind + ")";
    return out;
  }
  if (const char* pseudo = PseudoFilesystem(static_cast<std::uint32_t>(fs.f_type)); *pseudo != '\0') {
    out.error = std::string("not a regular file (a ") + pseudo + " file; not read)";
    return out;
  }
  auto too_large = [&] {
    out.text.clear();
    out.error = "file is larger than " + std::to_string(max_bytes) + " bytes";
    return out;
  };
  if (st.st_size > 0 && static_cast<std::uint64_t>(st.st_size) > max_bytes) return too_large();
  // st_size can be stale or 0 (procfs-like files, a file still growing): the read loop enforces
  // the bound itself, reading one byte past it to tell "exactly max_bytes" from "more".
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return cannot("cannot read: ");
    }
    if (n == 0) break;
    out.text.append(buf, static_cast<std::size_t>(n));
    if (out.text.size() > max_bytes) return too_large();
  }
  return out;
}

FileContent ReadAttribute(const std::string& path) {
  FileContent out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  char buf[4096];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0) out.error = errno;
  else out.text.assign(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

SysfsAttributes::~SysfsAttributes() {
  for (auto& [path, o] : open_) ::close(o.fd);
}

FileContent SysfsAttributes::Read(const std::string& path) {
  FileContent out;
  char buf[4096];
  auto it = open_.find(path);
  if (it != open_.end()) {
    ssize_t n;
    do {
      n = ::pread(it->second.fd, buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
      it->second.read = true;
      out.text.assign(buf, static_cast<std::size_t>(n));
      return out;
    }
    ::close(it->second.fd);  // gone (ENODEV) or failing: start over with a fresh open
    open_.erase(it);
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    out.error = errno;
    ::close(fd);
    return out;
  }
  out.text.assign(buf, static_cast<std::size_t>(n));
  struct statfs fs {};
  if (::fstatfs(fd, &fs) == 0 && fs.f_type == SYSFS_MAGIC) {
    open_.emplace(path, Open{fd, true});
  } else {
    ::close(fd);
  }
  return out;
}

void SysfsAttributes::CloseUnread() {
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.read) {
      it->second.read = false;
      ++it;
    } else {
      ::close(it->second.fd);
      it = open_.erase(it);
    }
  }
}

std::string JoinPath(std::string_view a, std::string_view b) {
  std::string out(a);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (out.empty()) return std::string(b);
  if (out != "/") out += '/';
  out += b;
  return out;
}

}  // namespace diskprobe::util
