#pragma once
// boot_config: the SD settings of the Raspberry Pi firmware's config.txt, evaluated for this board.
//
// Sources:
//   --path.bootconfig, else <rootfs>/boot/firmware/config.txt (Bookworm), else <rootfs>/boot/config.txt
//   files named by `include`, relative to the directory of config.txt
//   the board model (sources/board_model.h) for the [pi3]/[pi4]/[cm4]... filters
// Parsing: parsers/boot_config.h. The firmware reads config.txt at boot, so the values are what the
// file says now: an edit after boot shows before it takes effect.
// The files are stat()ed at every scrape and parsed again only when one changed (mtime, size,
// inode) or appeared. No config.txt at the default places (not a Pi): nothing is exported and that
// is success. A file that exists but cannot be read, or a --path.bootconfig that does not exist,
// fails the collector (logged once).
#include <optional>
#include <string>
#include <vector>

#include "scrape/collector.h"
#include "parsers/board_model.h"

namespace diskprobe::collectors {

class BootConfigCollector : public Collector {
 public:
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

  struct FileStamp {
    std::string path;
    long long mtime_ns = 0, size = 0;
    unsigned long long ino = 0;
    bool operator==(const FileStamp&) const = default;
  };

 private:
  bool board_read_ = false;
  std::optional<parsers::BoardModel> board_;
  std::vector<FileStamp> stamps_;  // files of the cached result, config.txt first
  std::string cached_text_;        // their families' text
};

}  // namespace diskprobe::collectors
