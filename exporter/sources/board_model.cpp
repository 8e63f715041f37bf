#include "sources/board_model.h"

#include "util/file.h"

namespace diskprobe::sources {

std::optional<parsers::BoardModel> ReadBoardModel(const std::string& sysfs, const std::string& procfs) {
  for (const std::string& p :
       {util::JoinPath(sysfs, "firmware/devicetree/base/model"), util::JoinPath(procfs, "device-tree/model")}) {
    util::FileContent f = util::ReadAttribute(p);
    if (!f.ok()) continue;
    if (auto m = parsers::ParseBoardModel(f.text)) return m;
  }
  return std::nullopt;
}

}  // namespace diskprobe::sources
