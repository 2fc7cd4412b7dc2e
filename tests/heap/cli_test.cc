// The memprof commands end to end on dumps made by real Ruby (fixtures/, see make_fixtures.rb):
// golden text and JSON, totals checked against an independent count, bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "test_support.h"

namespace memprof::heap {
namespace {

using testing::CommandResult;
using testing::expect_golden;
using testing::fixture_address;
using testing::fixture_path;
using testing::object_line;
using testing::root_line;
using testing::read_file;
using testing::run_memprof;
using testing::unzstd;

TEST(Cli, AnalyzeJsonTotalsEqualTheDump) {
  const testing::ScannedDump scanned = testing::scan_dump(unzstd(read_file(fixture_path("leak_b.json.zst"))));
  const uint64_t count = scanned.objects, memsize = scanned.memsize;
  ASSERT_GT(count, 5000u);
  CommandResult r = run_memprof("analyze leak_b.json.zst --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(uint64_t(doc["total"]["count"]), count);
  EXPECT_EQ(uint64_t(doc["total"]["memsize"]), memsize);
  // The groups partition the objects: their counts and memsizes add up to the totals.
  for (const char* key : {"by_type", "by_class", "by_location"}) {
    CommandResult all = run_memprof(std::string("analyze leak_b.json.zst --json --top 0"));
    simdjson::dom::parser p2;
    simdjson::dom::element full;
    ASSERT_EQ(p2.parse(all.out).get(full), simdjson::SUCCESS);
    uint64_t c = 0, m = 0;
    for (simdjson::dom::element row : full[key].get_array()) {
      c += uint64_t(row["count"]);
      m += uint64_t(row["memsize"]);
      EXPECT_TRUE(row["name"].is_string());
      EXPECT_TRUE(row["retained"].is_uint64() || row["retained"].is_int64());
    }
    EXPECT_EQ(c, count) << key;
    EXPECT_EQ(m, memsize) << key;
  }
}

TEST(Cli, PlainGzipAndZstdDumpsGiveTheSameReport) {
  // The plain file takes the parallel pread path, the compressed ones the streaming path.
  std::string plain = ::testing::TempDir() + "memprof_leak_b." + std::to_string(::getpid()) + ".json";
  { std::ofstream(plain, std::ios::binary) << unzstd(read_file(fixture_path("leak_b.json.zst"))); }
  auto report = [](const std::string& dump) {
    CommandResult r = run_memprof("analyze " + dump + " --json --top 0");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(r.out.find(R"("lines":)"));  // all but the dump name
  };
  std::string expected = report("leak_b.json.zst");
  EXPECT_EQ(report(plain), expected);
  EXPECT_EQ(report("leak_b.json.gz"), expected);
  EXPECT_EQ(report("- < leak_b.json.zst"), expected);  // "-": standard input (before: no such file)
  std::remove(plain.c_str());
}

TEST(Cli, AnalyzeGoldenTextAndJson) {
  CommandResult text = run_memprof("analyze leak_b.json.zst --top 8");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  expect_golden("analyze_leak_b.txt", text.out);
  CommandResult json = run_memprof("analyze leak_b.json.gz --json --top 5");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  expect_golden("analyze_leak_b.json", json.out);
}

TEST(Cli, PathFromGlobalThroughAThousandNodeList) {
  CommandResult r = run_memprof("path leak_b.json.zst " + fixture_address("list_tail"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("path_list_tail.txt", r.out);
  EXPECT_TRUE(r.out.starts_with("root global_tbl\n" + fixture_address("list_head") + " OBJECT Node, 40 bytes @ make_fixtures.rb:"));
  // The root, the list's first 2 and last 2 nodes, and the 996 between collapsed into one line.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6);
  EXPECT_NE(r.out.find("\n... 996 more Node ...\n"), std::string::npos);
  CommandResult full = run_memprof("path leak_b.json.zst --full " + fixture_address("list_tail"));
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_EQ(std::count(full.out.begin(), full.out.end(), '\n'), 1001);  // the root + 1,000 nodes
}

TEST(Cli, PathAndRetainersAsJson) {
  CommandResult path = run_memprof("path leak_b.json.zst --json " + fixture_address("list_tail"));
  ASSERT_EQ(path.exit_code, 0) << path.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(path.out).get(doc), simdjson::SUCCESS) << path.out;
  EXPECT_EQ(std::string_view(doc["root"]), "global_tbl");
  simdjson::dom::array hops = doc["path"];
  ASSERT_EQ(hops.size(), 5u);
  EXPECT_EQ(std::string_view(hops.at(0)["address"]), fixture_address("list_head"));
  EXPECT_EQ(uint64_t(hops.at(2)["collapsed"]), 996u);
  EXPECT_EQ(std::string_view(hops.at(2)["name"]), "Node");
  EXPECT_EQ(std::string_view(hops.at(4)["address"]), fixture_address("list_tail"));

  CommandResult retainers = run_memprof("retainers leak_b.json.zst --json " + fixture_address("first_leak"));
  ASSERT_EQ(retainers.exit_code, 0) << retainers.err;
  simdjson::dom::parser parser2;
  ASSERT_EQ(parser2.parse(retainers.out).get(doc), simdjson::SUCCESS) << retainers.out;
  EXPECT_EQ(std::string_view(doc["object"]["name"]), "Leaky");
  EXPECT_EQ(doc["retainers"].get_array().size(), 1u);
  EXPECT_EQ(uint64_t(doc["more_retainers"]), 0u);
  EXPECT_EQ(std::string_view(doc["immediate_dominator"]["address"]), "0x7f92563f3320");
}

TEST(Cli, RetainersOfAClassCollapseToCountsByClass) {
  // The String class is retained by every String (as its class): 2,972 objects.
  CommandResult r = run_memprof("retainers leak_b.json.zst 0x7f9255b3e428");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("0x7f9255b3e428 CLASS String, 5,248 bytes (retains 12,480 bytes)\n")) << r.out;
  EXPECT_NE(r.out.find("retained by 1 root kind and 2,972 objects\n"), std::string::npos);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4 + 1 + 20 + 1);
  EXPECT_NE(r.out.find("\n  ... 2,952 more: 2,815 String, 130 (IMEMO:ment), 3 (IMEMO:callcache), "),
            std::string::npos);
}

TEST(Cli, ShowGolden) {
  CommandResult r = run_memprof("show leak_b.json.zst " + fixture_address("first_leak"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("show_first_leak.txt", r.out);
  CommandResult json = run_memprof("show leak_b.json.zst --json " + fixture_address("registry"));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  expect_golden("show_registry.json", json.out);
  // A root's own child: its immediate dominator is the roots, said as retainers says it.
  CommandResult text = run_memprof("show leak_b.json.zst " + fixture_address("registry"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\n  immediate dominator: the roots\n"), std::string::npos) << text.out;
}

// A dynamic Symbol's name is in the dump as a String's value is: show prints both.
TEST(Cli, ShowPrintsAStringsValueAndASymbolsName) {
  memprof::testing::TempDir dir;
  const std::string path = dir.file("values.json");
  memprof::testing::write_file(
      path, object_line(0x10, "CLASS", 0, {}, 1000, R"(, "name":"Symbol")") +
                object_line(0x20, "SYMBOL", 0x10, {}, 40, R"(, "value":"dyn_sym")") +
                object_line(0x30, "STRING", 0, {}, 40, R"(, "value":"hello")") +
                R"({"address":"0x40", "type":"OBJECT", "memsize":1})" "\n");
  CommandResult symbol = run_memprof("show " + path + " 0x20");
  ASSERT_EQ(symbol.exit_code, 0) << symbol.err;
  EXPECT_NE(symbol.out.find("\n  value: :\"dyn_sym\"\n"), std::string::npos) << symbol.out;
  CommandResult json = run_memprof("show --json " + path + " 0x20");
  EXPECT_NE(json.out.find(R"("value_head":"dyn_sym")"), std::string::npos) << json.out;
  CommandResult string = run_memprof("show " + path + " 0x30");
  EXPECT_NE(string.out.find("\n  value: \"hello\"\n"), std::string::npos) << string.out;
  // One byte is "1 byte"; no flag is "flags: none", not an empty "flags: ".
  CommandResult bare = run_memprof("show " + path + " 0x40");
  EXPECT_NE(bare.out.find("\n  memsize 1 byte, retains 0 bytes (0 B)\n"), std::string::npos) << bare.out;
  EXPECT_NE(bare.out.find("\n  flags: none\n"), std::string::npos) << bare.out;
}

// An object's reference to itself (every IO's dump line has one) does not retain it: before, a
// File was listed among its own retainers, "retained by 1 root kind and 3 objects" for 2.
TEST(Cli, AnObjectIsNotItsOwnRetainer) {
  memprof::testing::TempDir dir;
  const std::string path = dir.file("self.json");
  memprof::testing::write_file(path, root_line("vm", {0x10}) +
                                         object_line(0x10, "FILE", 0, {0x10, 0x20}, 240) +
                                         object_line(0x20, "DATA", 0, {}, 64) +
                                         object_line(0x30, "OBJECT", 0, {0x20}, 40));
  CommandResult r = run_memprof("retainers " + path + " 0x10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("retained by 1 root kind and 0 objects\n"), std::string::npos) << r.out;
  CommandResult mutex = run_memprof("retainers " + path + " 0x20");
  EXPECT_NE(mutex.out.find("retained by 0 root kinds and 2 objects\n"), std::string::npos) << mutex.out;
  CommandResult json = run_memprof("retainers --json " + path + " 0x10");
  EXPECT_NE(json.out.find(R"("retainers":[])"), std::string::npos) << json.out;
}

TEST(Cli, RetainersGolden) {
  CommandResult r = run_memprof("retainers leak_b.json.zst " + fixture_address("first_leak"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("retainers_first_leak.txt", r.out);
  EXPECT_NE(r.out.find("kept alive only through machine_context: no\n"), std::string::npos);
  EXPECT_NE(r.out.find("retained by 0 root kinds and 1 object\n"), std::string::npos);
}

TEST(Cli, DiffFindsTheLeakedObjectsGolden) {
  CommandResult r = run_memprof("diff leak_a.json.zst leak_b.json.gz leak_c.json.zst");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("diff_abc.txt", r.out);
  // 50 Leaky objects (and their Strings) leaked in B; C dropped 10 of them.
  EXPECT_NE(r.out.find("\n        40     1.6 kB  make_fixtures.rb:51  Leaky\n"), std::string::npos);
  CommandResult json = run_memprof("diff leak_a.json.zst leak_b.json.zst leak_c.json.zst --json --top 3");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  expect_golden("diff_abc.json", json.out);
}

TEST(Cli, DiffAcrossGcCompactUsesGenerations) {
  CommandResult r = run_memprof("diff leak_c.json.zst leak_d.json.zst --json --top 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_golden("diff_compact.json", r.out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS);
  // Objects older than tracing that GC.compact moved: A has enough objects of their classes for
  // them to be old, but nothing proves it. They are counted apart, not as new.
  EXPECT_GT(uint64_t(doc["undecided"]["count"]), 1000u);
  uint64_t leaky = 0;
  for (simdjson::dom::element row : doc["by_location_and_class"].get_array()) {
    if (std::string_view(row["class"]) == "Leaky") leaky += uint64_t(row["count"]);
  }
  EXPECT_EQ(leaky, 5u);
}

// A new object no root reaches in B is garbage, not a leak; without B's ROOT lines, nothing says
// so, and the report says that everything was counted.
TEST(Cli, DiffLeavesOutGarbageWhenTheRootsAreKnown) {
  const std::string base = ::testing::TempDir() + "memprof_garbage." + std::to_string(::getpid());
  auto write = [&](const std::string& suffix, const std::string& text) {
    std::ofstream(base + suffix, std::ios::binary) << text;
    return base + suffix;
  };
  const std::string object_10 = testing::object_line(0x10, "STRING", 0, {}, 40);
  const std::string object_20 = testing::object_line(0x20, "STRING", 0, {}, 56);
  const std::string root = testing::root_line("vm", {0x10});
  const std::string a = write(".a", root + object_10);
  const std::string b = write(".b", root + object_10 + object_20);
  const std::string b_without_roots = write(".b0", object_10 + object_20);

  CommandResult known = run_memprof("diff " + a + " " + b);
  ASSERT_EQ(known.exit_code, 0) << known.err;
  EXPECT_NE(known.out.find("alive in " + b + ": 0 objects, 0 B\nleft out, unreachable in " + b +
                           ": 1 object, 56 B (garbage the GC had not swept yet)\n"),
            std::string::npos)
      << known.out;
  CommandResult unknown = run_memprof("diff " + a + " " + b_without_roots);
  ASSERT_EQ(unknown.exit_code, 0) << unknown.err;
  EXPECT_NE(unknown.out.find("alive in " + b_without_roots + ": 1 object, 56 B\nunreachable objects of " +
                             b_without_roots + " counted as alive: its ROOT lines are missing or were "
                             "not all read\n"),
            std::string::npos)
      << unknown.out;
  for (const char* suffix : {".a", ".b", ".b0"}) std::remove((base + suffix).c_str());
}

// ObjectSpace.dump_all(since: GEN) writes no ROOT lines: nothing is reachable, and the commands
// say why instead of calling every object garbage.
TEST(Cli, ADumpWithoutRootLinesIsNotCalledGarbage) {
  const std::string path = ::testing::TempDir() + "memprof_no_roots." + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << testing::object_line(0x10, "ARRAY", 0, {0x20}, 40)
                                        << testing::object_line(0x20, "STRING", 0, {}, 40);
  CommandResult path_out = run_memprof("path " + path + " 0x20");
  ASSERT_EQ(path_out.exit_code, 0) << path_out.err;
  EXPECT_EQ(path_out.out, "0x20 is not reachable from any root (the dump has no ROOT lines)\n");
  EXPECT_NE(path_out.err.find(": the dump has no ROOT lines (ObjectSpace.dump_all(since:) writes none)"),
            std::string::npos)
      << path_out.err;
  CommandResult analyze = run_memprof("analyze " + path);
  ASSERT_EQ(analyze.exit_code, 0) << analyze.err;
  EXPECT_NE(analyze.out.find("\nroots: none (no ROOT lines: retained sizes unknown, shown as 0)\n"),
            std::string::npos)
      << analyze.out;
  std::remove(path.c_str());
}

TEST(Cli, AnalyzeSaysWhatTheReaderLeftOut) {
  std::string path = ::testing::TempDir() + "memprof_problems." + std::to_string(::getpid()) + ".json";
  {
    std::ofstream(path, std::ios::binary)
        << R"({"type":"ROOT", "root":"vm", "references":["0x10", "zz"]})" "\n"
        << R"({"type":"ROOT", "root":"machine_context", "references":["0x10", )" "\n"
        << R"({"address":"0x10", "type":"STRING", "memsize":40, "references":["0x99"]})" "\n"
        << R"({"address":"0x10", "type":"STRING", "memsize":40})" "\n";
  }
  CommandResult r = run_memprof("analyze " + path);
  std::remove(path.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\ndump problems: 1 ROOT line unreadable (reachability and retained sizes "
                       "incomplete), 1 bad value skipped, 1 reference to an absent object dropped, "
                       "1 duplicate address\n"),
            std::string::npos)
      << r.out;
}

TEST(Cli, FiltersAndSamplesLeadFromARowToObjects) {
  CommandResult diff = run_memprof("diff leak_a.json.zst leak_b.json.zst --class Leaky --samples 2");
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_TRUE(diff.out.starts_with("objects of class Leaky only\n"
                                   "allocated after leak_a.json.zst and alive in leak_b.json.zst: 50 "
                                   "objects, 2.0 kB\n")) << diff.out;
  EXPECT_NE(diff.out.find("        50     2.0 kB  make_fixtures.rb:51  Leaky\n"
                          "                       e.g. " + fixture_address("last_leak") + " "),
            std::string::npos) << diff.out;

  CommandResult analyze =
      run_memprof("analyze leak_b.json.zst --type object --site make_fixtures.rb:51 --samples 1 --top 2");
  ASSERT_EQ(analyze.exit_code, 0) << analyze.err;
  EXPECT_NE(analyze.out.find("selected: site make_fixtures.rb:51, type object (50 of the dump's 7,736 "
                             "objects)\nobjects: 50, 2.0 kB (2,000 bytes)\n"),
            std::string::npos) << analyze.out;
  EXPECT_NE(analyze.out.find("\nby class (1 of 1)\n       count     memsize    retained  name\n"
                             "          50      2.0 kB     14.1 kB  Leaky\n"),
            std::string::npos) << analyze.out;

  // A filter that selects nothing says how names are written (exit 0: an empty selection is an answer).
  CommandResult none = run_memprof("analyze leak_b.json.zst --class Nope");
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_TRUE(none.err.starts_with("memprof: no object of leak_b.json.zst matches class Nope: classes are "
                                   "named as the by-class table names them")) << none.err;

  CommandResult site = run_memprof("analyze leak_b.json.zst --site nope.rb:1");
  EXPECT_EQ(site.exit_code, 0);
  EXPECT_EQ(site.err, "memprof: no object of leak_b.json.zst matches site nope.rb:1: sites are written as the "
                      "by-location table writes them (the file whole or its tail after a '/', with or without "
                      "its ':LINE')\n");

  CommandResult bad = run_memprof("analyze leak_b.json.zst --type thing");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "memprof: --type thing: not an object type (STRING, ARRAY, HASH, OBJECT, DATA, "
                     "IMEMO, CLASS, ...)\n");
}

// "-" is standard input, and messages say so: they said "/dev/stdin", a name the user never gave.
TEST(Cli, StandardInputIsCalledSoInErrors) {
  CommandResult empty = run_memprof("analyze - < /dev/null");
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_EQ(empty.err, "memprof: standard input: empty file\n");
  CommandResult truncated = memprof::testing::run_command(
      {"/bin/sh", "-c", fmt::format("head -c 3000 '{}' | '{}' analyze -", fixture_path("leak_b.json.gz"), MEMPROF_BINARY)});
  EXPECT_EQ(truncated.exit_code, 0) << truncated.err;  // read up to the cut (reader_test.cc)
  EXPECT_NE(truncated.err.find("memprof: warning: standard input: truncated gzip stream after "), std::string::npos)
      << truncated.err;
  CommandResult nothing = memprof::testing::run_command(
      {"/bin/sh", "-c", fmt::format("head -c 12 '{}' | '{}' analyze -", fixture_path("leak_b.json.gz"), MEMPROF_BINARY)});
  EXPECT_EQ(nothing.exit_code, 1);
  EXPECT_EQ(nothing.err, "memprof: standard input: truncated gzip stream\n");
}

// Ruby writes a file name as the bytes it has, which need not be UTF-8; the reader keeps it with
// U+FFFD in place of the bad bytes. The name typed as those bytes selects it (it selected nothing).
TEST(Cli, ASiteFilterMatchesAFileNameThatIsNotUtf8) {
  memprof::testing::TempDir dir;
  const std::string path = dir.file("latin1.json");
  memprof::testing::write_file(path, object_line(0x10, "STRING", 0, {}, 40, ", \"file\":\"caf\xe9.rb\", \"line\":7") +
                                         object_line(0x20, "STRING", 0, {}, 40, ", \"file\":\"other.rb\", \"line\":7"));
  CommandResult r = run_memprof("analyze " + path + " --site 'caf\xe9.rb:7'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(1 of the dump's 2 objects)"), std::string::npos) << r.out << r.err;
}

TEST(Cli, BadInputIsOneLineAndExitOne) {
  struct Case {
    std::string args;
    std::string err;
  } cases[] = {
      {"analyze missing.json", "memprof: missing.json: No such file or directory\n"},
      {"analyze /dev/null", "memprof: /dev/null: empty file\n"},
      // A regular file whose size says 0 but which has contents: read, not called empty.
      {"analyze /proc/self/status", "memprof: /proc/self/status: not a heap dump (line 1: invalid JSON)\n"},
      {"analyze make_fixtures.rb", "memprof: make_fixtures.rb: not a heap dump (line 1: invalid JSON)\n"},
      {"analyze addresses.txt --json", "memprof: addresses.txt: not a heap dump (line 1: invalid JSON)\n"},
      {"path leak_a.json.zst 0x1", "memprof: 0x1: no object at this address in leak_a.json.zst\n"},
      {"path leak_a.json.zst nothex", "memprof: nothex: not an address\n"},
      {"retainers missing.json 0x10", "memprof: missing.json: No such file or directory\n"},
      {"show leak_a.json.zst 0x1", "memprof: 0x1: no object at this address in leak_a.json.zst\n"},
      {"diff leak_a.json.zst /dev/null", "memprof: /dev/null: empty file\n"},
  };
  for (const Case& c : cases) {
    CommandResult r = run_memprof(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

// Before: read whole (a 3 GB file of zeros: 13 s and 3 GB of memory before "invalid JSON"), or
// without end (/dev/zero, until malloc failed and the process aborted).
TEST(Cli, AFirstLineThatIsNoRecordAndHasNoEndIsRefusedAtOnce) {
  memprof::testing::TempDir dir;
  memprof::testing::write_file(dir.file("zeros.bin"), std::string(size_t{3} << 20, '\0'));
  CommandResult file = run_memprof("analyze " + dir.file("zeros.bin"));
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_EQ(file.err, "memprof: " + dir.file("zeros.bin") +
                          ": not a heap dump (line 1: not a JSON object, and no line end in its first 262.1 kB)\n");
  CommandResult endless = run_memprof("analyze /dev/zero");
  EXPECT_EQ(endless.exit_code, 1);
  EXPECT_EQ(endless.err, "memprof: /dev/zero: not a heap dump (line 1: not a JSON object, and no line end in its first 4.1 MB)\n");
}

}  // namespace
}  // namespace memprof::heap
