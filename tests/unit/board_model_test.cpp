#include "parsers/board_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pi_samples.h"

namespace {

using namespace diskprobe::parsers;
using diskprobe::test_pi::sample_body;
using diskprobe::test_pi::sample_lines;
using Filters = std::vector<std::string>;

// The line of a pasted terminal session that holds the model.
std::string model_line(const std::string& file) {
  for (const auto& line : sample_lines("model", file))
    if (line.rfind("Raspberry Pi", 0) == 0) return line;
  ADD_FAILURE() << "no model line in " << file;
  return {};
}

TEST(BoardModel, Sample01Pi3BPlus) {
  // The real file is NUL-terminated without newline; feed it that way.
  const auto b = ParseBoardModel(model_line("01-pi3bplus-rev1.3.txt") + std::string(1, '\0'));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->model, "Raspberry Pi 3 Model B Plus Rev 1.3");
  EXPECT_TRUE(b->raspberry_pi);
  EXPECT_EQ(b->family, BoardFamily::kPi3);
  EXPECT_EQ(ToString(b->family), "pi3");
  EXPECT_EQ(b->variant, "3B+");
  EXPECT_EQ(b->revision, std::optional<std::string>("1.3"));
  EXPECT_FALSE(b->compute_module);
  EXPECT_EQ(b->config_filters, (Filters{"pi3", "pi3+"}));
  EXPECT_TRUE(b->sd_overclock_applies);  // bcm2835-sdhost
}

TEST(BoardModel, Sample02Pi4GluedPrompt) {
  // The paste shows "...Rev 1.4root": the file has no newline, so the next
  // shell prompt was glued on. The real bytes end in NUL.
  const auto pasted = model_line("02-pi4b-rev1.4-glued-prompt.txt");
  EXPECT_EQ(pasted, "Raspberry Pi 4 Model B Rev 1.4root");
  const auto raw = pasted.substr(0, pasted.size() - 4) + std::string(1, '\0');
  const auto b = ParseBoardModel(raw);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->model, "Raspberry Pi 4 Model B Rev 1.4");
  EXPECT_EQ(b->family, BoardFamily::kPi4);
  EXPECT_EQ(b->variant, "4B");
  EXPECT_EQ(b->revision, std::optional<std::string>("1.4"));
  EXPECT_EQ(b->config_filters, (Filters{"pi4"}));
  EXPECT_FALSE(b->sd_overclock_applies);
  // Text after the NUL never reaches the model.
  EXPECT_EQ(ParseBoardModel(raw + "root")->model, "Raspberry Pi 4 Model B Rev 1.4");
  // Even the glued paste keeps family and a numeric revision.
  const auto glued = ParseBoardModel(pasted);
  EXPECT_EQ(glued->family, BoardFamily::kPi4);
  EXPECT_EQ(glued->revision, std::optional<std::string>("1.4"));
}

TEST(BoardModel, Sample03Pi5FromCpuinfo) {
  const auto m = ModelFromCpuinfo(sample_body("model", "03-pi5b-rev1.0.txt"));
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, "Raspberry Pi 5 Model B Rev 1.0");
  const auto b = ParseBoardModel(*m);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->family, BoardFamily::kPi5);
  EXPECT_EQ(b->variant, "5B");
  EXPECT_EQ(b->config_filters, (Filters{"pi5"}));
  EXPECT_FALSE(b->sd_overclock_applies);  // sdhci-brcmstb
  EXPECT_FALSE(ModelFromCpuinfo("processor\t: 0\nHardware\t: BCM2835\n"));
}

TEST(BoardModel, Sample04Cm4SeesPi4AndCm4) {
  const auto b = ParseBoardModel(model_line("04-cm4-rev1.0.txt"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->model, "Raspberry Pi Compute Module 4 Rev 1.0");
  EXPECT_EQ(b->family, BoardFamily::kPi4);
  EXPECT_EQ(b->variant, "CM4");
  EXPECT_TRUE(b->compute_module);
  EXPECT_EQ(b->config_filters, (Filters{"pi4", "cm4"}));
}

TEST(BoardModel, Sample05Zero2WTwoSourcesAgree) {
  const auto lines = sample_lines("model", "05-zero2w-rev1.0-with-echo.txt");
  ASSERT_EQ(lines.at(1), lines.at(3));  // /sys/firmware/devicetree/base/model == /proc/device-tree/model
  const auto b = ParseBoardModel(lines.at(1) + '\n');
  ASSERT_TRUE(b);
  EXPECT_EQ(b->model, "Raspberry Pi Zero 2 W Rev 1.0");
  EXPECT_EQ(b->family, BoardFamily::kPi0);
  EXPECT_EQ(b->variant, "Zero 2 W");
  EXPECT_EQ(b->config_filters, (Filters{"pi0", "pi0w", "pi02"}));
  EXPECT_TRUE(b->sd_overclock_applies);
}

TEST(BoardModel, OtherModelStrings) {
  struct Case {
    const char* model;
    BoardFamily family;
    const char* variant;
    Filters filters;
  };
  const std::vector<Case> cases{
      {"Raspberry Pi Model B Rev 2", BoardFamily::kPi1, "1B", {"pi1"}},
      {"Raspberry Pi Model B Plus Rev 1.2", BoardFamily::kPi1, "1B+", {"pi1"}},
      {"Raspberry Pi Compute Module Rev 1.0", BoardFamily::kPi1, "CM1", {"pi1", "cm1"}},
      {"Raspberry Pi 2 Model B Rev 1.1", BoardFamily::kPi2, "2B", {"pi2"}},
      {"Raspberry Pi 3 Model B Rev 1.2", BoardFamily::kPi3, "3B", {"pi3"}},
      {"Raspberry Pi 3 Model A Plus Rev 1.0", BoardFamily::kPi3, "3A+", {"pi3", "pi3+"}},
      {"Raspberry Pi Compute Module 3 Rev 1.0", BoardFamily::kPi3, "CM3", {"pi3", "cm3"}},
      {"Raspberry Pi Compute Module 3 Plus Rev 1.0", BoardFamily::kPi3, "CM3+", {"pi3", "pi3+", "cm3+"}},
      {"Raspberry Pi Zero Rev 1.3", BoardFamily::kPi0, "Zero", {"pi0"}},
      {"Raspberry Pi Zero W Rev 1.1", BoardFamily::kPi0, "Zero W", {"pi0", "pi0w"}},
      {"Raspberry Pi 400 Rev 1.0", BoardFamily::kPi4, "400", {"pi4", "pi400"}},
      {"Raspberry Pi Compute Module 4S Rev 1.0", BoardFamily::kPi4, "CM4S", {"pi4", "cm4s"}},
      {"Raspberry Pi 500 Rev 1.0", BoardFamily::kPi5, "500", {"pi5", "pi500"}},
      {"Raspberry Pi Compute Module 5 Rev 1.0", BoardFamily::kPi5, "CM5", {"pi5", "cm5"}},
      {"Raspberry Pi Compute Module 5 Lite Rev 1.0", BoardFamily::kPi5, "CM5", {"pi5", "cm5"}},
  };
  for (const auto& c : cases) {
    const auto b = ParseBoardModel(c.model);
    ASSERT_TRUE(b) << c.model;
    EXPECT_EQ(b->family, c.family) << c.model;
    EXPECT_EQ(b->variant, c.variant) << c.model;
    EXPECT_EQ(b->config_filters, c.filters) << c.model;
  }
}

TEST(BoardModel, NonPiAndEmpty) {
  EXPECT_FALSE(ParseBoardModel(""));
  EXPECT_FALSE(ParseBoardModel(std::string(1, '\0')));
  EXPECT_FALSE(ParseBoardModel(" \n"));
  const auto b = ParseBoardModel(std::string("Rockchip RK3399 Board") + '\0');
  ASSERT_TRUE(b);
  EXPECT_EQ(b->model, "Rockchip RK3399 Board");
  EXPECT_FALSE(b->raspberry_pi);
  EXPECT_EQ(b->family, BoardFamily::kUnknown);
  EXPECT_TRUE(b->config_filters.empty());
  EXPECT_FALSE(b->sd_overclock_applies);
  // An unknown future Pi: recognised as a Pi, family unknown, no filters guessed.
  const auto future = ParseBoardModel("Raspberry Pi 9 Model Q Rev 1.0");
  EXPECT_TRUE(future->raspberry_pi);
  EXPECT_EQ(future->family, BoardFamily::kUnknown);
  EXPECT_TRUE(future->config_filters.empty());
}

}  // namespace
