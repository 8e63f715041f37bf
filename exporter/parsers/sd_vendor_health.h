// SD card vendor health replies: the 512-byte data block a card returns to CMD56 (GEN_CMD) with a
// vendor's argument.
//
// Source of truth: the SD Physical Layer Specification defines CMD56 only as "general purpose
// command, data block whose format is vendor specific" (Part 1, section 4.3.12 / table "Class 8
// commands"): there is no standard layout. Each layout below is one vendor's, as documented by
// that vendor and implemented in sdmon (github.com/Ognian/sdmon, src/sdmon.c), which is where the
// public knowledge of these replies is collected; each row names its own source. Every layout
// except `apacer` is a single read (CMD56 with bit 0 of the argument set: data from the card);
// `apacer` first writes one block of zeros with argument 0x10, then reads with 0x21.
//
// Plausibility: a card that does not implement a vendor's command often still answers, with
// something that is not health: a block of 00 or FF (sdmon issue 42: a SanDisk card answering
// FF) or of one other byte (QEMU's emulated card: EC), or the contents of a data sector (sdmon issue 18: an LD card answering its own MBR boot
// code to every argument). Other tools print such replies as health (655.35 % life left). Here a
// reply is accepted only when it is not one byte repeated, carries its layout's signature, and its
// percentages and text fields are in range; otherwise it is rejected with a reason and nothing of
// it is exported.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "parsers/parse_result.h"

namespace diskprobe::parsers {

inline constexpr std::size_t kSdGenCmdBlockSize = 512;
using SdGenCmdBlock = std::array<std::uint8_t, kSdGenCmdBlockSize>;

// One row per vendor layout. Any switch over it lists every value (no default), so -Wswitch
// finds a row without its decoder.
enum class SdVendorLayout { kSandisk, kLongsys, kInnodisk, kAdata, kTranscend, kMicron, kSwissbit, kApacer };

struct SdVendorLayoutInfo {
  SdVendorLayout layout;
  std::string_view name;  // config value and `layout` label: "sandisk"
  std::uint32_t read_arg;  // CMD56 argument of the read
  // Two-step layouts: the argument of the CMD56 write (one block of zeros) sent before the read;
  // nullopt for a plain read.
  std::optional<std::uint32_t> prepare_write_arg;
  // Tried by `layout: auto`. Only single reads are: a two-step layout sends a data block to the
  // card, which a card of another vendor may take for something else.
  bool in_auto;
  std::string_view source;  // where the layout is documented
};

// Every layout, in the order `auto` tries them (sdmon's order: the two layouts answering
// argument 1 first, as most cards seen answer it).
std::span<const SdVendorLayoutInfo> SdVendorLayouts();
// The row of `name`, or null.
const SdVendorLayoutInfo* FindSdVendorLayout(std::string_view name);
const SdVendorLayoutInfo& InfoOf(SdVendorLayout layout);

// What a layout reports, decoded. Absent fields are those the layout does not carry.
struct SdVendorHealth {
  SdVendorLayout layout = SdVendorLayout::kSandisk;
  // Estimated life used, percent: 0 new, 100 the rated endurance reached. Layouts that report
  // "life remaining" give 100 - remaining. SanDisk's byte may exceed 100 (its document: the card
  // may accept writes past the rated life).
  std::optional<double> life_used_percent;
  std::optional<double> erase_count_average;  // program/erase cycles of the average block
  std::optional<std::uint64_t> erase_count_max;  // cycles of the most worn block
  std::optional<std::uint64_t> grown_bad_blocks;  // blocks retired since manufacture
  std::optional<std::uint64_t> spare_blocks;      // spare blocks left for replacing bad ones
  std::optional<std::uint64_t> power_cycles;
  std::optional<std::uint64_t> abnormal_power_losses;  // power lost without a clean shutdown
  std::optional<std::uint64_t> written_bytes;          // host data written over the card's life
};

// Why a reply was rejected: the `reason` label values.
inline constexpr std::string_view kSdRejectAllZero = "all_zero";    // every byte 00
inline constexpr std::string_view kSdRejectAllOnes = "all_ones";    // every byte FF
// Every byte the same other value: QEMU's emulated SD card (raspi3b) answers every CMD56 with 512
// bytes of EC, through the real kernel path.
inline constexpr std::string_view kSdRejectConstant = "constant";
inline constexpr std::string_view kSdRejectSignature = "signature";  // not this layout's signature
inline constexpr std::string_view kSdRejectRange = "out_of_range";  // a percentage or text field out of range
inline constexpr std::string_view kSdRejectBackwards = "backwards";  // a counter below the last accepted reply

// A rejection: the reason (one of the above) and a one-line detail for the log.
struct SdReject {
  std::string_view reason;
  std::string detail;
};

// Decodes `block` as `layout`. Never throws. On rejection returns the reason in *reject and
// nullopt.
std::optional<SdVendorHealth> ParseSdVendorReply(SdVendorLayout layout, std::span<const std::uint8_t, kSdGenCmdBlockSize> block,
                                                 SdReject* reject);

// Whether `next` is plausible after `prev` (the last accepted reply of the same card and layout):
// counters (erase counts, bad blocks, power cycles, power losses, bytes written) never decrease.
// nullopt when plausible, else the rejection (reason "backwards", the field in the detail).
std::optional<SdReject> CheckSdVendorProgress(const SdVendorHealth& prev, const SdVendorHealth& next);

}  // namespace diskprobe::parsers
