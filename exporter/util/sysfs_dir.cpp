#include "util/sysfs_dir.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace diskprobe::util {
namespace {

// "mmc2" < "mmc10": compare the non-digit prefix, then the trailing number by value.
bool NaturalLess(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    return i;
  };
  std::size_t ia = split(a), ib = split(b);
  int c = a.compare(0, ia, b, 0, ib);
  if (c != 0) return c < 0;
  std::size_t la = a.size() - ia, lb = b.size() - ib;
  if (la != lb) return la < lb;
  return a.compare(ia, la, b, ib, lb) < 0;
}

}  // namespace

std::vector<std::string> ListDir(const std::string& dir, int* error) {
  std::vector<std::string> out;
  if (error != nullptr) *error = 0;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (error != nullptr) *error = errno;
    return out;
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    out.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), NaturalLess);
  return out;
}

std::string LinkBasename(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string target(buf, static_cast<std::size_t>(n));
  while (!target.empty() && target.back() == '/') target.pop_back();
  auto slash = target.rfind('/');
  return slash == std::string::npos ? target : target.substr(slash + 1);
}

}  // namespace diskprobe::util
