#include "collectors/mmc_card.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "util/file.h"
#include "util/strings.h"
#include "util/log.h"

namespace diskprobe::collectors {
namespace {

using prometheus::MetricType;
using Card = MmcCardCollector::Card;
namespace p = parsers;

// mmcblkN, not mmcblkNbootM or mmcblkNrpmb (the same card).
bool IsWholeCard(const std::string& name) {
  if (name.rfind("mmcblk", 0) != 0 || name.size() == 6) return false;
  for (std::size_t i = 6; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

std::string Hex(unsigned v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

std::string Trimmed(const std::string& dir, const char* attr, int* err = nullptr) {
  util::FileContent f = util::ReadAttribute(dir + "/" + attr);
  if (err != nullptr) *err = f.error;
  return f.ok() ? std::string(util::Trim(f.text)) : std::string();
}

// Product name without the padding some makers use (spaces, NULs).
std::string CleanName(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '\0') out += c;
  return std::string(util::Trim(out));
}

std::string SerialOf(const Card& c) { return c.cid ? Hex(c.cid->serial, 8) : std::string(); }

Card ReadCard(const std::string& devdir, const std::string& cid_raw) {
  const std::string dir = devdir + "/device";
  Card c;
  c.cid_raw = cid_raw;
  c.type = Trimmed(dir, "type");
  c.fwrev = Trimmed(dir, "fwrev");
  c.read_at = std::chrono::steady_clock::now();
  const p::CardLayout layout = c.type == "MMC" ? p::CardLayout::kMmc : p::CardLayout::kSd;

  std::optional<unsigned> ext_csd_rev;
  if (layout == p::CardLayout::kMmc) {
    c.ext_csd_rev = Trimmed(dir, "rev");
    ext_csd_rev = util::ParseHex<unsigned>(c.ext_csd_rev);
  }
  c.manfid = Trimmed(dir, "manfid");
  c.oemid = Trimmed(dir, "oemid");
  if (auto r = p::DecodeCid(cid_raw, layout, ext_csd_rev)) {
    c.cid = *r;
    c.suspicions = p::CidSuspicions(*r);
    if (c.manfid.empty()) c.manfid = Hex(r->manfid, 6);
    if (c.oemid.empty()) c.oemid = Hex(r->oemid_sysfs, 4);
  } else {
    c.rejected["cid"] = r.error;
  }

  int err = 0;
  std::string csd = Trimmed(dir, "csd", &err);
  if (err == 0) {
    if (auto r = p::DecodeCsd(csd, layout)) {
      // The kernel sizes an SD card's block device from the CSD, so the two agree unless the
      // register (or our decoding of it) is wrong.
      auto sectors = util::ParseU64(Trimmed(devdir, "size"));
      if (r->capacity_bytes && sectors && *r->capacity_bytes != *sectors * 512)
        c.rejected["csd"] = "capacity " + std::to_string(*r->capacity_bytes) +
                            " bytes does not match the block device (" + std::to_string(*sectors * 512) + " bytes)";
      else c.csd = *r;
    } else {
      c.rejected["csd"] = r.error;
    }
  }
  if (layout == p::CardLayout::kSd) {
    std::string scr = Trimmed(dir, "scr", &err);
    if (err == 0) {
      if (auto r = p::DecodeScr(scr)) c.scr = *r;
      else c.rejected["scr"] = r.error;
    }
    std::string ssr = Trimmed(dir, "ssr", &err);
    if (err == 0) {
      if (auto r = p::DecodeSsr(ssr)) c.ssr = *r;
      else c.rejected["ssr"] = r.error;
    }
  } else {
    std::string lt = Trimmed(dir, "life_time", &err);
    if (err == 0) {
      auto r = p::ParseLifeTime(lt);
      using S = p::LifeTimeEstimate::State;
      if (!r) c.rejected["life_time"] = r.error;
      else if (r->type_a.state == S::kReserved || r->type_b.state == S::kReserved)
        c.rejected["life_time"] = "reserved value " + lt;
      else c.life_time = *r;
    }
    std::string eol = Trimmed(dir, "pre_eol_info", &err);
    if (err == 0) {
      auto r = p::ParsePreEolInfo(eol);
      if (!r) c.rejected["pre_eol_info"] = r.error;
      else if (r->state == p::PreEolInfo::kReserved) c.rejected["pre_eol_info"] = "reserved value " + eol;
      else c.pre_eol = *r;
    }
  }
  return c;
}

const std::vector<const char*>& Registers(const std::string& type) {
  static const std::vector<const char*> kSd = {"cid", "csd", "scr", "ssr"};
  static const std::vector<const char*> kMmc = {"cid", "csd", "life_time", "pre_eol_info"};
  return type == "MMC" ? kMmc : kSd;
}

struct Row {
  const std::string* device;
  const Card* card;
  double swaps;
  const std::map<std::string, double>* rejected_total;
};

template <typename Get>
void Family(FamilySink& out, const std::vector<Row>& rows, const char* name, const char* help, Get get) {
  out.Family(name, help, MetricType::Gauge);
  for (const auto& r : rows) {
    std::optional<double> v = get(*r.card);
    if (v) out.Sample({{"device", *r.device}}, *v);
  }
}

}  // namespace

CollectResult MmcCardCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  std::string failure;
  std::vector<Row> rows;
  const auto now = std::chrono::steady_clock::now();
  for (const Device& dev : ctx.devices) {
    if (!IsWholeCard(dev.name)) continue;
    util::FileContent cidf = util::ReadAttribute(dev.sysfs_path + "/device/cid");
    if (!cidf.ok()) {
      // Gone since discovery, or not an SD/MMC card (no cid): nothing to report.
      if (cidf.error != ENOENT && cidf.error != ENODEV && failure.empty())
        failure = dev.sysfs_path + "/device/cid: " + std::strerror(cidf.error);
      continue;
    }
    std::string cid_raw(util::Trim(cidf.text));
    DeviceState& st = devices_[dev.name];
    if (!st.have_card || st.card.cid_raw != cid_raw || now - st.card.read_at > kFactsMaxAge) {
      Card fresh = ReadCard(dev.sysfs_path, cid_raw);
      const bool other_card = st.have_card && st.card.cid_raw != cid_raw;
      if (other_card) {
        st.swaps += 1;
        log::Warn("mmc card changed", {{"device", dev.name},
                                       {"old_serial", SerialOf(st.card)},
                                       {"new_serial", SerialOf(fresh)},
                                       {"name", fresh.cid ? CleanName(fresh.cid->name) : ""}});
      }
      for (const auto& [reg, why] : fresh.rejected) {
        // Counted when a register turns implausible: a new card, or the same card re-read.
        if (!other_card && st.have_card && st.card.rejected.count(reg)) continue;
        st.rejected_total[reg] += 1;
        log::Warn("mmc card register rejected", {{"device", dev.name}, {"register", reg}, {"err", why}});
      }
      if ((!st.have_card || other_card) && !fresh.suspicions.empty())
        for (const auto& s : fresh.suspicions)
          log::Warn("mmc card identity suspicious", {{"device", dev.name}, {"why", s}});
      if ((!st.have_card || other_card) && fresh.cid)
        if (auto m = p::LookupManufacturer(fresh.cid->layout, fresh.cid->manfid, fresh.cid->oemid); m && m->shared)
          log::Debug("mmc card manufacturer id is shared by several brands",
                    {{"device", dev.name}, {"manfid", fresh.manfid}, {"oemid", fresh.oemid},
                     {"brands", std::string(m->brands)}});
      st.card = std::move(fresh);
      st.have_card = true;
    }
    for (const char* reg : Registers(st.card.type)) st.rejected_total.try_emplace(reg, 0);
    rows.push_back({&dev.name, &st.card, st.swaps, &st.rejected_total});
  }

  out.Family("diskprobe_mmc_card_info",
             "Identity of the SD card or eMMC from its CID (and SCR for sd_spec); value 1. manfid, oemid, fwrev "
             "and ext_csd_rev (eMMC EXT_CSD_REV) as sysfs shows them; maker unknown for a MID several brands use. "
             "Empty label: not known or register rejected.",
             MetricType::Gauge);
  for (const auto& r : rows) {
    const Card& c = *r.card;
    std::string date, maker, name, oemid_ascii, revision, serial, spec;
    if (c.cid) {
      const p::Cid& id = *c.cid;
      const p::CardLayout layout = id.layout;
      if (id.DateValid()) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04u-%02u", id.year, id.month);
        date = buf;
      }
      if (auto m = p::LookupManufacturer(layout, id.manfid, id.oemid)) maker = std::string(m->name);
      name = CleanName(id.name);
      oemid_ascii = id.oemid_text;
      revision = std::to_string(id.prv_major) + "." + std::to_string(id.prv_minor);
      serial = Hex(id.serial, 8);
    }
    if (c.scr && c.scr->spec_version) spec = *c.scr->spec_version;
    out.Sample({{"date", date},
                {"device", *r.device},
                {"ext_csd_rev", c.ext_csd_rev},
                {"fwrev", c.fwrev},
                {"maker", maker},
                {"manfid", c.manfid},
                {"name", name},
                {"oemid", c.oemid},
                {"oemid_ascii", oemid_ascii},
                {"revision", revision},
                {"sd_spec", spec},
                {"serial", serial},
                {"type", c.type}},
               1);
  }
  Family(out, rows, "diskprobe_mmc_card_capacity_bytes",
         "Capacity from the CSD register, equal to the block device size (absent for eMMC above 2 GiB: EXT_CSD).",
         [](const Card& c) -> std::optional<double> {
           if (!c.csd || !c.csd->capacity_bytes) return std::nullopt;
           return static_cast<double>(*c.csd->capacity_bytes);
         });
  Family(out, rows, "diskprobe_mmc_card_cid_suspicions",
         "Number of counterfeit and white-label indicators in the SD card's CID (MID/OEM pairs seen on fakes, "
         "placeholder names, revision 0.0, serial 0; reasons in the log).",
         [](const Card& c) -> std::optional<double> {
           if (!c.cid || c.type != "SD") return std::nullopt;
           return static_cast<double>(c.suspicions.size());
         });
  Family(out, rows, "diskprobe_mmc_card_speed_class",
         "SD speed class the card claims: 0, 2, 4, 6 or 10 (SSR SPEED_CLASS).",
         [](const Card& c) -> std::optional<double> {
           if (!c.ssr) return std::nullopt;
           auto v = c.ssr->SpeedClass();
           return v ? std::optional<double>(*v) : std::nullopt;
         });
  Family(out, rows, "diskprobe_mmc_card_uhs_speed_grade", "UHS speed grade: 0 none, 1 U1, 3 U3 (SSR UHS_SPEED_GRADE).",
         [](const Card& c) -> std::optional<double> {
           return c.ssr ? std::optional<double>(c.ssr->uhs_speed_grade) : std::nullopt;
         });
  Family(out, rows, "diskprobe_mmc_card_video_speed_class",
         "Video speed class: 0 none, 6, 10, 30, 60, 90 for V6..V90 (SSR VIDEO_SPEED_CLASS).",
         [](const Card& c) -> std::optional<double> {
           return c.ssr ? std::optional<double>(c.ssr->video_speed_class) : std::nullopt;
         });
  Family(out, rows, "diskprobe_mmc_card_app_perf_class",
         "Application performance class: 0 none, 1 A1, 2 A2 (SSR APP_PERF_CLASS).",
         [](const Card& c) -> std::optional<double> {
           return c.ssr ? std::optional<double>(c.ssr->app_perf_class) : std::nullopt;
         });
  out.Family("diskprobe_mmc_card_life_time_estimate",
             "eMMC life used, JEDEC code: 1 = 0-10 %, 2 = 10-20 % ... 10 = 90-100 %, 11 = exceeded "
             "(DEVICE_LIFE_TIME_EST_TYP_A/B).",
             MetricType::Gauge);
  for (const auto& r : rows) {
    if (!r.card->life_time) continue;
    for (const auto& [type, est] :
         {std::pair{"A", r.card->life_time->type_a}, std::pair{"B", r.card->life_time->type_b}})
      if (est.state != p::LifeTimeEstimate::State::kNotDefined)
        out.Sample({{"device", *r.device}, {"type", type}}, est.raw);
  }
  Family(out, rows, "diskprobe_mmc_card_pre_eol_info",
         "eMMC reserved blocks consumed: 1 normal, 2 warning (80 %), 3 urgent (90 %) (PRE_EOL_INFO).",
         [](const Card& c) -> std::optional<double> {
           if (!c.pre_eol || c.pre_eol->state == p::PreEolInfo::kNotDefined) return std::nullopt;
           return static_cast<double>(c.pre_eol->raw);
         });
  out.Family("diskprobe_mmc_card_register_rejected_total",
             "Card registers found implausible and not reported, counted once per card read.", MetricType::Counter);
  for (const auto& r : rows)
    for (const auto& [reg, n] : *r.rejected_total) out.Sample({{"device", *r.device}, {"register", reg}}, n);
  out.Family("diskprobe_mmc_card_swaps_total",
             "Times another card (a different CID) appeared on this device while the exporter ran.",
             MetricType::Counter);
  for (const auto& r : rows) out.Sample({{"device", *r.device}}, r.swaps);
  return failure.empty() ? CollectResult::Ok() : CollectResult::Failed(std::move(failure));
}

}  // namespace diskprobe::collectors
