// tpusim validate's figures (report/validation_report.hpp) against hand-worked values.
#include <gtest/gtest.h>

#include "report/validation_report.hpp"

namespace tpusim {
namespace {

ValidationCase ran(size_t index, const std::string& family, double measured, double simulated) {
  return {index, family, family + " case " + std::to_string(index), measured, simulated, ""};
}

TEST(ValidationReport, FamilyFiguresAreTheMedianP90AndSharesOfTheErrors) {
  // add: ratios 1.05, 0.8, 1.5, 1.2 -> errors 0.05, 0.2, 0.5, 0.2; sorted 0.05 0.2 0.2 0.5:
  //   median (0.2 + 0.2) / 2 = 0.2; p90 is rank ceil(0.9 * 4) = 4: 0.5;
  //   within 10%: 1 of 4; within 25%: 3 of 4; ratios sorted 0.8 1.05 1.2 1.5: median 1.125.
  // relu: one case that ran (ratio 0.5) and one that did not.
  std::vector<ValidationCase> cases = {ran(0, "add", 2, 2.1), ran(1, "add", 10, 8), ran(2, "relu", 4, 2),
                                       ran(3, "add", 1, 1.5), ran(4, "add", 5, 6)};
  cases.push_back({5, "relu", "relu case 5", 1, std::nullopt, "unsupported: no"});
  const std::vector<FamilyFit> fits = fitByFamily(cases);
  ASSERT_EQ(fits.size(), 3u);
  const FamilyFit& add = fits[0];
  EXPECT_EQ(add.family, "add");
  EXPECT_EQ(add.cases, 4u);
  EXPECT_EQ(add.ran, 4u);
  EXPECT_DOUBLE_EQ(add.median_error, 0.2);
  EXPECT_DOUBLE_EQ(add.p90_error, 0.5);
  EXPECT_DOUBLE_EQ(add.within_10, 0.25);
  EXPECT_DOUBLE_EQ(add.within_25, 0.75);
  EXPECT_DOUBLE_EQ(add.median_ratio, 1.125);
  EXPECT_EQ(add.worst, 3u);
  EXPECT_DOUBLE_EQ(add.worst_ratio, 1.5);
  const FamilyFit& relu = fits[1];
  EXPECT_EQ(relu.cases, 2u);
  EXPECT_EQ(relu.ran, 1u);
  EXPECT_DOUBLE_EQ(relu.median_error, 0.5);
  // all: errors 0.05 0.2 0.2 0.5 0.5 -> median 0.2, p90 rank ceil(4.5) = 5: 0.5.
  const FamilyFit& all = fits[2];
  EXPECT_EQ(all.family, "all");
  EXPECT_EQ(all.cases, 6u);
  EXPECT_EQ(all.ran, 5u);
  EXPECT_DOUBLE_EQ(all.median_error, 0.2);
  EXPECT_DOUBLE_EQ(all.p90_error, 0.5);
  EXPECT_DOUBLE_EQ(all.within_10, 0.2);
}

TEST(ValidationReport, ViewsListEveryCaseAndTheOnesThatCouldNotRun) {
  const std::vector<ValidationCase> cases = {ran(0, "mul", 2, 3),
                                             {1, "mul", "mul, \"odd\" <name>", 1, std::nullopt, "unsupported: x"}};
  const std::vector<FamilyFit> fits = fitByFamily(cases);
  const std::string csv = validationCsv(cases);
  EXPECT_EQ(csv,
            "index,family,case,measured_us,simulated_us,ratio,abs_error,error\n"
            "0,mul,mul case 0,2,3,1.5,0.5,\n"
            "1,mul,\"mul, \"\"odd\"\" <name>\",1,,,,unsupported: x\n");
  const std::string table = validationTable(fits, cases);
  EXPECT_NE(table.find("1 case could not run:\n  case 1 mul, \"odd\" <name>: unsupported: x"), std::string::npos);
  const std::string page = validationHtml(fits, cases, "tpuv4", "figures");
  EXPECT_NE(page.find("mul, &quot;odd&quot; &lt;name&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<name>"), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  const auto json = validationJson(fits, cases, "tpuv4", "figures");
  EXPECT_EQ(json["cases"][1]["error"], "unsupported: x");
  EXPECT_FALSE(json["cases"][1].contains("simulated_us"));
}

}  // namespace
}  // namespace tpusim
