// ltrace's filter expressions as -x takes them: which rules add and remove, what LIBRARY
// matches, and the one-line errors for what memprof does not take.
#include "tracer/symbol_filter.h"

#include <gtest/gtest.h>

namespace memprof::tracer {
namespace {

const DefiningObject kLibc{"/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6", false};
const DefiningObject kSqlite{"/usr/lib/libsqlite3.so.0", "libsqlite3.so.0", false};
const DefiningObject kProgram{"/usr/bin/app", "app", true};

SymbolFilter parsed(std::string_view expression) {
  auto filter = SymbolFilter::parse(expression);
  EXPECT_TRUE(filter.ok()) << expression << ": " << filter.message();
  return filter.ok() ? *filter : *SymbolFilter::parse("never_matched");
}

std::string error_of(std::string_view expression) {
  auto filter = SymbolFilter::parse(expression);
  return filter.ok() ? "(parsed)" : filter.message();
}

TEST(SymbolFilter, APlainGlobIsOneRuleThatAdds) {
  SymbolFilter filter = parsed("sqlite3_*");
  EXPECT_TRUE(filter.selects("sqlite3_prepare_v2", kSqlite));
  EXPECT_TRUE(filter.selects("sqlite3_open", kLibc));  // no @LIBRARY: every object
  EXPECT_FALSE(filter.selects("malloc", kLibc));
  EXPECT_EQ(filter.plain_glob(), "sqlite3_*");
  EXPECT_FALSE(filter.names_a_library());
  EXPECT_FALSE(parsed("malloc+free").plain_glob().has_value());
}

TEST(SymbolFilter, RulesAddAndRemoveInTurn) {
  SymbolFilter filter = parsed("malloc+free+str*-strlen");
  for (const char* name : {"malloc", "free", "strdup", "strcmp"}) EXPECT_TRUE(filter.selects(name, kLibc)) << name;
  for (const char* name : {"strlen", "calloc"}) EXPECT_FALSE(filter.selects(name, kLibc)) << name;
  // A later rule adds back what an earlier one removed.
  EXPECT_TRUE(parsed("str*-strlen+strlen").selects("strlen", kLibc));
  // A first rule that removes removes from everything.
  SymbolFilter all_but_free = parsed("-free");
  EXPECT_TRUE(all_but_free.selects("malloc", kLibc));
  EXPECT_FALSE(all_but_free.selects("free", kLibc));
  EXPECT_TRUE(all_but_free.may_select("anything"));
}

TEST(SymbolFilter, TheLibraryIsTheDefiningObjectsFileNameMainOrAPath) {
  SymbolFilter in_sqlite = parsed("*@libsqlite3.so*");
  EXPECT_TRUE(in_sqlite.selects("sqlite3_open", kSqlite));
  EXPECT_FALSE(in_sqlite.selects("malloc", kLibc));
  EXPECT_TRUE(in_sqlite.names_a_library());
  SymbolFilter program = parsed("@MAIN-main");  // a missing symbol is '*'
  EXPECT_TRUE(program.selects("handle_request", kProgram));
  EXPECT_FALSE(program.selects("main", kProgram));
  EXPECT_FALSE(program.selects("malloc", kLibc));
  EXPECT_TRUE(parsed("malloc@/lib/*").selects("malloc", kLibc));  // '*' crosses '/' in a path
  EXPECT_FALSE(parsed("malloc@/usr/*").selects("malloc", kLibc));
  // malloc and free, but none of libc's: the ltrace manual's example.
  SymbolFilter not_libc = parsed("malloc+free-@libc.so*");
  EXPECT_FALSE(not_libc.selects("malloc", kLibc));
  EXPECT_TRUE(not_libc.selects("malloc", kProgram));
  EXPECT_TRUE(not_libc.may_select("free"));
}

TEST(SymbolFilter, BracketsEscapesAndAnchorsAreGlobSyntaxNotRules) {
  EXPECT_TRUE(parsed("[a-z]*_open").selects("sqlite3_open", kSqlite));  // '-' inside [...]
  EXPECT_TRUE(parsed("*@libstdc[+][+]*").selects("_Znwm", {"/usr/lib/libstdc++.so.6", "libstdc++.so.6", false}));
  EXPECT_TRUE(parsed("^malloc$").selects("malloc", kLibc));
  EXPECT_TRUE(parsed("^malloc$").spells("malloc"));
  EXPECT_FALSE(parsed("mall*").spells("malloc"));
}

TEST(SymbolFilter, WhatMemprofDoesNotTakeGetsOneLineThatSaysWhy) {
  EXPECT_EQ(error_of(""), "an empty filter");
  EXPECT_EQ(error_of("/^mall/"), "'/^mall/' is a regular expression, which memprof does not take: write a glob (*, ?, [...])");
  EXPECT_EQ(error_of("malloc@/libc.*/"),
            "'/libc.*/' is a regular expression, which memprof does not take: write a glob (*, ?, [...])");
  EXPECT_EQ(error_of("malloc@"), "'malloc@' names no library after '@'");
  EXPECT_EQ(error_of("[a"), "a '[' that no ']' closes (write \\[ for a bracket itself)");
  EXPECT_EQ(error_of("malloc+[a"), "'[a': a '[' that no ']' closes (write \\[ for a bracket itself)");
  // A library name with a '-' or '+' in it, cut by ltrace's syntax.
  EXPECT_NE(error_of("*@libruby-3.1.so*").find("the rule '-3.1.so*' names no function"), std::string::npos);
  EXPECT_NE(error_of("*@libstdc++.so.6").find("an empty rule"), std::string::npos);
  EXPECT_NE(error_of("malloc+").find("an empty rule"), std::string::npos);
}

}  // namespace
}  // namespace memprof::tracer
