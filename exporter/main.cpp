// diskprobe_exporter: flags, then the exporter's life (app/app.h) or the bench program.
#include <malloc.h>

#include <string_view>

#include "app/app.h"
#include "app/flags.h"
#include "util/log.h"

int main(int argc, char** argv) {
  using namespace diskprobe;
  // glibc gives every thread that allocates its own malloc arena (up to 8 per core), each holding
  // on to freed memory; a daemon with a handful of mostly idle threads needs two.
  mallopt(M_ARENA_MAX, 2);
  if (argc > 1 && std::string_view(argv[1]) == "bench") return app::ExecBench(argv);
  app::Flags flags;
  if (std::optional<int> done = app::ParseFlags(argc, argv, &flags)) return *done;

  log::Level level;
  log::Format format;
  log::ParseLevel(flags.log_level, &level);
  log::ParseFormat(flags.log_format, &format);
  log::Configure(level, format);

  return flags.config_check ? app::CheckConfig(flags) : app::Run(flags);
}
