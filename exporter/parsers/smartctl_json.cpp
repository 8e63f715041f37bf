#include "parsers/smartctl_json.h"

#include <array>
#include <nlohmann/json.hpp>

namespace diskprobe::parsers {
namespace {

using nlohmann::json;

// Reads typed fields of one object, remembering the first field of a wrong type.
class Fields {
 public:
  explicit Fields(std::string* error) : error_(error) {}

  const json* Object(const json& parent, const char* key, const char* path) {
    const json* v = Find(parent, key);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) return Wrong(path, "an object");
    return v;
  }
  const json* Array(const json& parent, const char* key, const char* path) {
    const json* v = Find(parent, key);
    if (v == nullptr) return nullptr;
    if (!v->is_array()) return Wrong(path, "an array");
    return v;
  }
  template <typename T>
  void Unsigned(const json& parent, const char* key, const char* path, T* out) {
    const json* v = Find(parent, key);
    if (v == nullptr) return;
    if (!v->is_number_unsigned()) return void(Wrong(path, "a non-negative integer"));
    *out = v->get<std::uint64_t>();
  }
  template <typename T>
  void Unsigned(const json& parent, const char* key, const char* path, std::optional<T>* out) {
    T x{};
    const json* v = Find(parent, key);
    if (v == nullptr) return;
    Unsigned(parent, key, path, &x);
    if (v->is_number_unsigned()) *out = x;
  }
  void Int(const json& parent, const char* key, const char* path, int* out) {
    const json* v = Find(parent, key);
    if (v == nullptr) return;
    if (!v->is_number_integer()) return void(Wrong(path, "an integer"));
    *out = v->get<int>();
  }
  void Number(const json& parent, const char* key, const char* path, double* out) {
    const json* v = Find(parent, key);
    if (v == nullptr) return;
    if (!v->is_number()) return void(Wrong(path, "a number"));
    *out = v->get<double>();
  }
  void String(const json& parent, const char* key, const char* path, std::string* out) {
    const json* v = Find(parent, key);
    if (v == nullptr) return;
    if (!v->is_string()) return void(Wrong(path, "a string"));
    *out = v->get<std::string>();
  }
  void Bool(const json& parent, const char* key, const char* path, std::optional<bool>* out) {
    const json* v = Find(parent, key);
    if (v == nullptr) return;
    if (!v->is_boolean()) return void(Wrong(path, "true or false"));
    *out = v->get<bool>();
  }
  bool ok() const { return error_->empty(); }

 private:
  static const json* Find(const json& parent, const char* key) {
    auto it = parent.find(key);
    return it == parent.end() || it->is_null() ? nullptr : &*it;
  }
  const json* Wrong(const char* path, const char* want) {
    if (error_->empty()) *error_ = std::string(path) + ": not " + want;
    return nullptr;
  }
  std::string* error_;
};

// The deepest nesting of arrays and objects in `text`, outside strings; stops counting once
// past `limit`. nlohmann::json builds a node per bracket: a 1 MiB run of '[' grew the exporter
// by about 70 MB before this bound (smartctl's own reports nest 4-5 deep).
int NestingDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

const SmartAttribute* SmartctlReport::Attribute(int id) const {
  for (const SmartAttribute& a : attributes)
    if (a.id == id) return &a;
  return nullptr;
}

ParseResult<SmartctlReport> ParseSmartctlJson(std::string_view text) {
  if (NestingDepth(text, kSmartctlMaxDepth) > kSmartctlMaxDepth)
    return ParseResult<SmartctlReport>::Fail("arrays and objects nested more than " +
                                             std::to_string(kSmartctlMaxDepth) + " deep: not smartctl --json output");
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse_error carries the byte offset in its message
    return ParseResult<SmartctlReport>::Fail(std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object()) return ParseResult<SmartctlReport>::Fail("not a JSON object");
  auto version = doc.find("json_format_version");
  if (version == doc.end() || !version->is_array() || version->empty() || !(*version)[0].is_number_unsigned() ||
      (*version)[0].get<unsigned>() != 1)
    return ParseResult<SmartctlReport>::Fail("json_format_version is not [1, ...]: not smartctl --json output");

  std::string error;
  Fields f(&error);
  SmartctlReport r;
  const json* smartctl = f.Object(doc, "smartctl", "smartctl");
  if (smartctl == nullptr || !smartctl->contains("exit_status"))
    return ParseResult<SmartctlReport>::Fail(error.empty() ? "smartctl.exit_status missing" : error);
  f.Int(*smartctl, "exit_status", "smartctl.exit_status", &r.exit_status);
  if (const json* msgs = f.Array(*smartctl, "messages", "smartctl.messages")) {
    for (const json& m : *msgs) {
      std::string s;
      if (m.is_object()) f.String(m, "string", "smartctl.messages[].string", &s);
      if (!s.empty()) r.messages.push_back(std::move(s));
    }
  }
  if (const json* dev = f.Object(doc, "device", "device")) {
    f.String(*dev, "type", "device.type", &r.device_type);
    f.String(*dev, "protocol", "device.protocol", &r.protocol);
  }
  f.String(doc, "model_family", "model_family", &r.model_family);
  f.String(doc, "model_name", "model_name", &r.model_name);
  if (r.model_name.empty()) f.String(doc, "scsi_model_name", "scsi_model_name", &r.model_name);
  f.String(doc, "firmware_version", "firmware_version", &r.firmware_version);
  f.Unsigned(doc, "logical_block_size", "logical_block_size", &r.logical_block_size);
  if (const json* st = f.Object(doc, "smart_status", "smart_status")) f.Bool(*st, "passed", "smart_status.passed", &r.smart_passed);
  if (const json* t = f.Object(doc, "temperature", "temperature")) {
    if (t->contains("current")) {
      double c = 0;
      f.Number(*t, "current", "temperature.current", &c);
      if ((*t)["current"].is_number()) r.temperature_celsius = c;
    }
  }
  if (const json* p = f.Object(doc, "power_on_time", "power_on_time")) f.Unsigned(*p, "hours", "power_on_time.hours", &r.power_on_hours);
  f.Unsigned(doc, "power_cycle_count", "power_cycle_count", &r.power_cycles);

  if (const json* attrs = f.Object(doc, "ata_smart_attributes", "ata_smart_attributes")) {
    if (const json* table = f.Array(*attrs, "table", "ata_smart_attributes.table")) {
      for (const json& row : *table) {
        if (!row.is_object()) {
          if (error.empty()) error = "ata_smart_attributes.table[]: not an object";
          break;
        }
        SmartAttribute a;
        f.Int(row, "id", "ata_smart_attributes.table[].id", &a.id);
        f.String(row, "name", "ata_smart_attributes.table[].name", &a.name);
        f.Int(row, "value", "ata_smart_attributes.table[].value", &a.value);
        f.Int(row, "worst", "ata_smart_attributes.table[].worst", &a.worst);
        f.Int(row, "thresh", "ata_smart_attributes.table[].thresh", &a.thresh);
        f.String(row, "when_failed", "ata_smart_attributes.table[].when_failed", &a.when_failed);
        if (const json* flags = f.Object(row, "flags", "ata_smart_attributes.table[].flags")) {
          std::optional<bool> pre;
          f.Bool(*flags, "prefailure", "ata_smart_attributes.table[].flags.prefailure", &pre);
          a.prefailure = pre.value_or(false);
        }
        if (const json* raw = f.Object(row, "raw", "ata_smart_attributes.table[].raw")) {
          f.Unsigned(*raw, "value", "ata_smart_attributes.table[].raw.value", &a.raw);
          f.String(*raw, "string", "ata_smart_attributes.table[].raw.string", &a.raw_string);
        }
        if (a.id < 1 || a.id > 255) {
          if (error.empty()) error = "ata_smart_attributes.table[].id: " + std::to_string(a.id) + " is not 1-255";
          break;
        }
        // An id repeated in the table keeps its first row (as Attribute() reads it): two rows
        // would be two samples of one series.
        if (r.Attribute(a.id) == nullptr) r.attributes.push_back(std::move(a));
      }
    }
  }
  if (const json* n = f.Object(doc, "nvme_smart_health_information_log", "nvme_smart_health_information_log")) {
    SmartNvmeLog l;
    const char* p = "nvme_smart_health_information_log";
    f.Unsigned(*n, "critical_warning", p, &l.critical_warning);
    f.Unsigned(*n, "percentage_used", p, &l.percentage_used);
    f.Unsigned(*n, "available_spare", p, &l.available_spare);
    f.Number(*n, "data_units_written", p, &l.data_units_written);
    f.Number(*n, "data_units_read", p, &l.data_units_read);
    f.Number(*n, "media_errors", p, &l.media_errors);
    f.Number(*n, "unsafe_shutdowns", p, &l.unsafe_shutdowns);
    r.nvme = l;
  }
  f.Unsigned(doc, "scsi_grown_defect_list", "scsi_grown_defect_list", &r.scsi_grown_defects);
  if (const json* log = f.Object(doc, "scsi_error_counter_log", "scsi_error_counter_log")) {
    for (const char* kind : {"read", "write", "verify"}) {
      const json* dir = f.Object(*log, kind, "scsi_error_counter_log.<kind>");
      if (dir == nullptr || !dir->contains("total_uncorrected_errors")) continue;
      SmartScsiErrorCounter c{kind, 0};
      f.Unsigned(*dir, "total_uncorrected_errors", "scsi_error_counter_log.<kind>.total_uncorrected_errors", &c.uncorrected);
      r.scsi_errors.push_back(std::move(c));
    }
  }
  if (!f.ok()) return ParseResult<SmartctlReport>::Fail(error);
  return ParseResult<SmartctlReport>::Ok(std::move(r));
}

std::optional<double> SmartWrittenBytes(const SmartctlReport& r, std::string* source) {
  struct Unit {
    std::string_view name;
    double bytes;  // 0: the logical block size
  };
  // A name that carries its unit first: some drives (Intel S3520) also have a Total_LBAs_Written
  // that counts the same 32 MiB units as their Host_Writes_32MiB.
  static constexpr std::array<Unit, 6> kUnits = {{{"Host_Writes_32MiB", 32.0 * 1024 * 1024},
                                                  {"Host_Writes_GiB", 1024.0 * 1024 * 1024},
                                                  {"Lifetime_Writes_GiB", 1024.0 * 1024 * 1024},
                                                  {"Total_Writes_GiB", 1024.0 * 1024 * 1024},
                                                  {"Host_Writes_MiB", 1024.0 * 1024},
                                                  {"Total_LBAs_Written", 0}}};
  for (const Unit& u : kUnits)
    for (const SmartAttribute& a : r.attributes)
      if (a.name == u.name) {
        *source = a.name;
        return static_cast<double>(a.raw) * (u.bytes == 0 ? static_cast<double>(r.logical_block_size) : u.bytes);
      }
  if (r.nvme) {
    *source = "data_units_written";
    return r.nvme->data_units_written * 512000.0;
  }
  return std::nullopt;
}

std::optional<double> SmartLifeRemaining(const SmartctlReport& r, std::string* source) {
  static constexpr std::array<std::string_view, 6> kWear = {"Percent_Lifetime_Remain", "SSD_Life_Left",
                                                            "Remaining_Lifetime_Perc", "Percent_Life_Remaining",
                                                            "Media_Wearout_Indicator", "Wear_Leveling_Count"};
  // A normalized value outside 0-100 is not a percentage on this drive (the field is a byte, 1-253
  // by the ATA convention, and 253 commonly means "not yet measured"): skipped, never a ratio above 1.
  for (std::string_view name : kWear)
    for (const SmartAttribute& a : r.attributes)
      if (a.name == name && a.value >= 0 && a.value <= 100) {
        *source = a.name;
        return a.value / 100.0;
      }
  if (r.nvme) {
    *source = "percentage_used";
    const double used = static_cast<double>(r.nvme->percentage_used) / 100.0;
    return used >= 1 ? 0.0 : 1.0 - used;
  }
  return std::nullopt;
}

}  // namespace diskprobe::parsers
