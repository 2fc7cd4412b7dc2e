// trace/trace_output.h's summary_table: ltrace -c's table. A library unloaded and loaded again
// at another address is traced as another function of the same name; the reader sees one row.
#include <gtest/gtest.h>

#include "trace/trace_output.h"

namespace memprof::trace {
namespace {

TEST(SummaryTable, RowsOfOneNameAreAddedUpAndSortedByTime) {
  std::string table = summary_table({{"BZ2_bzlibVersion", 2000, 1'000'000},
                                     {"dlopen", 3, 900'000'000},
                                     {"BZ2_bzlibVersion", 1, 500},
                                     {"BZ2_bzlibVersion", 1, 500}});
  EXPECT_EQ(table,
            "% time     seconds  usecs/call     calls      function\n"
            "------ ----------- ----------- --------- --------------------\n"
            " 99.89    0.900000      300000         3 dlopen\n"
            "  0.11    0.001001           0      2002 BZ2_bzlibVersion\n"
            "------ ----------- ----------- --------- --------------------\n"
            "100.00    0.901001                  2005 total\n");
}

// `trace -c --json` printed the text table: its summary is JSON too, with the same rows.
TEST(SummaryTable, JsonHasTheSameRowsAndTotal) {
  EXPECT_EQ(summary_json({{"BZ2_bzlibVersion", 2000, 1'000'000},
                          {"dlopen", 3, 900'000'000},
                          {"BZ2_bzlibVersion", 2, 1000}}),
            R"({"summary":[{"function":"dlopen","calls":3,"seconds":0.900000000},)"
            R"({"function":"BZ2_bzlibVersion","calls":2002,"seconds":0.001001000}],)"
            R"("total":{"calls":2005,"seconds":0.901001000}})" "\n");
  EXPECT_EQ(summary_json({}), R"({"summary":[],"total":{"calls":0,"seconds":0.000000000}})" "\n");
}

TEST(SummaryTable, NoRowsIsTheHeaderAndAZeroTotal) {
  EXPECT_EQ(summary_table({}),
            "% time     seconds  usecs/call     calls      function\n"
            "------ ----------- ----------- --------- --------------------\n"
            "------ ----------- ----------- --------- --------------------\n"
            "100.00    0.000000                     0 total\n");
}

}  // namespace
}  // namespace memprof::trace
