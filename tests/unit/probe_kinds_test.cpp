// The probe-kind table (config/probe_kinds.h, probes/kinds.h): the documented defaults in
// config/default.yml and the rows agree, and everything derived from the rows (names, direction,
// the keys config accepts) follows them.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "config/config.h"
#include "probes/kinds.h"

namespace diskprobe::config {
namespace {

TEST(ProbeKinds, DefaultYmlDocumentsEveryKindWithTheTablesKeysAndDefaults) {
  const YAML::Node defaults = YAML::Load(std::string(kDefaultConfigYaml))["probes"]["defaults"];
  ASSERT_TRUE(defaults.IsMap());
  EXPECT_EQ(defaults.size(), static_cast<std::size_t>(kProbeKinds)) << "one entry per row, no other";
  LoadResult loaded = LoadDefault();
  ASSERT_TRUE(loaded.config);
  for (const ProbeKindRow& row : kProbeKindTable) {
    SCOPED_TRACE(std::string(row.name));
    const YAML::Node node = defaults[std::string(row.name)];
    ASSERT_TRUE(node.IsMap()) << "config/default.yml has no probes.defaults." << row.name;
    std::set<std::string> documented, accepted;
    for (auto it = node.begin(); it != node.end(); ++it) documented.insert(it->first.Scalar());
    for (std::size_t k = 0; k < kProbeKeyNames.size(); ++k)
      if (row.Accepts(static_cast<ProbeKey>(k))) accepted.insert(std::string(kProbeKeyNames[k]));
    EXPECT_EQ(documented, accepted) << "every key the kind accepts, with its default value";
    // The values default.yml gives are the row's: loading it changes nothing.
    EXPECT_EQ(loaded.config->probes.defaults[row.kind], row.defaults);
    EXPECT_EQ(ProbeSet()[row.kind], row.defaults);
  }
}

TEST(ProbeKinds, NamesAndDirectionsComeFromTheRows) {
  std::set<std::string_view> names;
  for (const ProbeKindRow& row : kProbeKindTable) {
    EXPECT_TRUE(names.insert(row.name).second) << "duplicate name " << row.name;
    EXPECT_EQ(ProbeKindName(row.kind), row.name);
    EXPECT_EQ(ProbeKindNamed(row.name), row.kind);
    EXPECT_EQ(IsWriteProbe(row.kind), row.direction == ByteDirection::kWrite);
    EXPECT_EQ(UsesProbeFile(row.kind), row.target == ProbeTarget::kProbeFile);
    EXPECT_EQ(probes::RunnerOf(row.kind).kind, row.kind);
    EXPECT_NE(probes::RunnerOf(row.kind).run, nullptr);
    // A kind that writes on the raw device would need its own safety review: none does.
    EXPECT_FALSE(row.target == ProbeTarget::kRawDevice && row.direction == ByteDirection::kWrite) << row.name;
  }
  EXPECT_EQ(ProbeKindNamed("nosuch"), std::nullopt);
  // The exported label values are an API: these six never change.
  EXPECT_EQ(ProbeKindName(ProbeKind::kRandRead), "randread");
  EXPECT_EQ(ProbeKindName(ProbeKind::kSeqWrite), "seqwrite");
  EXPECT_EQ(ProbeKindName(ProbeKind::kVerify), "verify");
}

TEST(ProbeKinds, ConfigAcceptsExactlyEachRowsKeys) {
  for (const ProbeKindRow& row : kProbeKindTable) {
    for (std::size_t k = 0; k < kProbeKeyNames.size(); ++k) {
      const std::string key(kProbeKeyNames[k]);
      const bool accepted = row.Accepts(static_cast<ProbeKey>(k));
      // A value valid for any key that takes it: a whole 4 KiB-multiple size or count.
      const std::string value = key == "enabled" ? "true" : key == "interval" ? "1m" : key == "ops" ? "8" : "8KiB";
      auto r = LoadString("probes:\n  defaults:\n    " + std::string(row.name) + ": {" + key + ": " + value + "}\n",
                          "k.yml");
      if (accepted) {
        // size alone may break the sequential rule against the default request_size; only "unknown key" matters.
        for (const auto& e : r.errors) EXPECT_EQ(e.message.find("unknown key"), std::string::npos) << e.ToString();
      } else {
        ASSERT_EQ(r.errors.size(), 1u) << row.name << "." << key;
        EXPECT_NE(r.errors[0].message.find("unknown key"), std::string::npos) << r.errors[0].ToString();
      }
    }
  }
  auto r = LoadString("probes:\n  defaults:\n    nosuch: {}\n", "k.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  std::string names;
  for (const ProbeKindRow& row : kProbeKindTable) names += (names.empty() ? "" : ", ") + std::string(row.name);
  EXPECT_EQ(r.errors[0].ToString(), "k.yml:3:5: probes.defaults.nosuch: unknown key (known keys: " + names + ")");
}

}  // namespace
}  // namespace diskprobe::config
