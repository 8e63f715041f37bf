// Raspberry Pi firmware config.txt, evaluated for one board.
// Sources of truth:
//   https://www.raspberrypi.com/documentation/computers/config_txt.html
//     (file format, `include`, conditional filters: raspberrypi/documentation
//      config_txt/conditional.adoc; "[cm4] also sees [pi4] contents", [all]
//      resets every filter, filters of the same type replace each other,
//      filters of different types combine)
//   https://github.com/raspberrypi/firmware/blob/master/boot/overlays/README
//     (base dtparams sd_overclock, sd_poll_once, sd_pio_limit, sd_debug,
//      sd_force_pio, sd_cqe; sdhost/sdtweak overlay params overclock_50,
//      poll_once, pio_limit, debug, force_pio; dtparams after a dtoverlay go
//      to that overlay when it exports them, else to the base DT)
//
// Decisions where the firmware is not documented (also in the tests):
//   * Lines under a filter this parser cannot evaluate ([HDMI:0], [EDID=..],
//     [gpio4=1], [0x12345678] serial, [tryboot], [board-type=..], unknown
//     names, or any model filter when the board is unknown) are NOT applied;
//     the section and the lines it skipped are listed in `unevaluated`.
//   * `include` is textual ("causes the content of the specified file to be
//     inserted into the current file", config_txt/what_is_config_txt.adoc):
//     the included file starts with the includer's filter state and its final
//     state carries back. An `include` line under a filter that does not apply
//     is not followed. The firmware (start*.elf; bootcode.bin and the EEPROM
//     bootloader do not support include) reads every file from the boot
//     partition, so a path is relative to the directory of config.txt, never
//     to the including file; the loader resolves it.
//   * Bounds, because a text include is a macro expansion: 9 files of 6
//     includes each expand to millions of files. The firmware documents no
//     limit; these are far above any real boot partition (Raspberry Pi OS
//     uses none, OpenWrt one):
//       - nesting deeper than max_include_depth (8)  -> "include_depth";
//       - a file that includes itself, directly or through others
//                                                    -> "include_loop";
//       - more than max_includes (64) includes followed in total, or more
//         than max_total_bytes (1 MiB) of text evaluated in total, repeats
//         included                                   -> "include_limit";
//     the include line is then not followed and the rest is evaluated.
//   * Each path is loaded at most once per ParseBootConfig call (the result,
//     missing or not, is cached by the path as written), so a file included
//     twice costs one read.
//   * `[none]` is a model-type filter that matches nothing (a later model
//     filter replaces it, `[all]` resets it).
//   * Values are kept verbatim (the format has no quoting and no trailing
//     comments); a bare dtparam/overlay param name is recorded as "on".
//     In sd_settings the boolean SD dtparams (sd_poll_once, sd_debug,
//     sd_force_pio, sd_cqe, and the overlay spellings of the first three)
//     are normalised to "on"/"off" from on/true/yes/okay/1 and
//     off/false/no/0 in any case (overlays README, "Boolean parameters");
//     any other value is a "bad_value" diagnostic and the setting is not
//     recorded.
//   * A UTF-8 byte order mark at the start of any file is skipped; CRLF line
//     ends are accepted. A "[" line without "]" and a key that is not a
//     setting name (letters, digits, "_", ":", "-", ".") are
//     "unparsed_line" diagnostics, quoted with non-printable bytes as \xNN.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parsers/board_model.h"

namespace diskprobe::parsers {

// Returns the content of a file named in an `include` line (path as written,
// relative to the boot directory: the caller resolves it), or nullopt when it
// cannot be read. Must not throw.
using BootFileLoader = std::function<std::optional<std::string>(std::string_view path)>;

struct BootConfigInput {
  // Board to evaluate model filters for (from ParseBoardModel). nullopt or
  // a board without config_filters: every model filter is unevaluated.
  std::optional<BoardModel> board;
  BootFileLoader load_file;              // empty: includes are reported, not followed
  std::string file_name = "config.txt";  // name used in diagnostics and loop detection
  unsigned max_include_depth = 8;
  unsigned max_includes = 64;              // includes followed in total (repeats count)
  std::size_t max_total_bytes = 1u << 20;  // text evaluated in total, config.txt included
};

struct BootConfigLocation {
  std::string file;
  unsigned line = 0;  // 1-based
};

struct BootOverlay {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;  // in order, bare name -> "on"
  BootConfigLocation where;
};

struct BootSection {
  std::string header;  // as written, without brackets: "pi4", "HDMI:0", "all"
  BootConfigLocation where;
  // Whether lines after this header (until the next header) apply:
  // "yes", "no", or "unknown" (not evaluated; see `unevaluated`).
  std::string applies;
};

struct BootUnevaluated {
  std::string header;  // the filter that could not be evaluated
  std::string reason;
  BootConfigLocation where;
  std::vector<std::string> skipped_lines;  // settings not applied because of it
};

struct BootDiagnostic {
  // "unparsed_line" (no '=' and not a known space-separated command),
  // "include_missing", "include_loop", "include_depth", "include_limit"
  // (max_includes or max_total_bytes reached), "include_not_followed"
  // (no loader), "bad_value" (e.g. a non-integer sd_overclock).
  std::string kind;
  std::string message;
  BootConfigLocation where;
};

struct BootConfig {
  // Plain key=value settings in force (last assignment wins). Keys keep
  // their ":N" suffix ("hdmi_mode:0"). dtparam/dtoverlay are not in here.
  std::map<std::string, std::string> settings;
  // Base device-tree parameters in force (last wins).
  std::map<std::string, std::string> dtparams;
  // Overlays loaded, in order, with their own and following-dtparam params.
  std::vector<BootOverlay> overlays;

  // SD-related settings in force: base dtparams named sd_*, the
  // sdhost/sdtweak overlay params under their base names (overclock_50 ->
  // sd_overclock, poll_once -> sd_poll_once ...), "sd_overlay" (sdhost or
  // sdtweak when loaded), enable_uart, core_freq, core_freq_min,
  // avoid_pwm_pll.
  std::map<std::string, std::string> sd_settings;
  // Effective SD overclock request in Hz (sd_overclock / overclock_50 are in
  // MHz). Absent when not set, 0, or not an integer (then a bad_value
  // diagnostic). It is a ceiling: the real clock is an integer divider of
  // the core clock (see mmc ios "actual clock"), and Pi 4/5 ignore it
  // (BoardModel::sd_overclock_applies).
  std::optional<std::uint64_t> sd_overclock_hz;
  std::optional<BootConfigLocation> sd_overclock_where;

  std::vector<std::string> files;     // files evaluated, in order (config.txt first; a repeat again)
  unsigned includes_followed = 0;     // include lines whose file was evaluated
  std::size_t loads = 0;              // calls of load_file (distinct paths)
  std::vector<BootSection> sections;  // every header seen, in order
  std::vector<BootUnevaluated> unevaluated;
  std::vector<BootDiagnostic> diagnostics;
};

// Parse and evaluate. Never fails as a whole: problems are diagnostics. Work is
// bounded by max_includes * the loader's file size and max_total_bytes.
BootConfig ParseBootConfig(std::string_view text, const BootConfigInput& input);

}  // namespace diskprobe::parsers
