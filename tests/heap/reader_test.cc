// The dump reader: fields of every Ruby version, compression, bad lines, bad input.
#include <gtest/gtest.h>
#include <lzma.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <tuple>

#include "heap/byte_source.h"
#include "heap/chunk_parser.h"
#include "heap/file_blocks.h"
#include "heap/loader.h"
#include "heap/object_type.h"
#include "heap/record_parser.h"
#include "heap/units.h"
#include "test_support.h"

namespace memprof::heap {
namespace {

using testing::gzip;
using testing::load_text;
using testing::object_line;
using testing::root_line;
using testing::xz;
using testing::zstd;

Result<Heap> load_bytes(const std::string& bytes) {
  return load_heap_from_bytes({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()},
                              "test.json");
}

// Loads `text` as "x.json", keeping what the reader printed to its warnings stream.
struct LoadedWithWarnings {
  Result<Heap> heap;
  std::string printed;
};
LoadedWithWarnings load_with_warnings(const std::string& text) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* warnings = open_memstream(&buffer, &size);
  auto heap = load_heap_from_bytes({reinterpret_cast<const unsigned char*>(text.data()), text.size()},
                                   "x.json", {.warnings = warnings});
  std::fclose(warnings);
  LoadedWithWarnings loaded{std::move(heap), std::string(buffer, size)};
  std::free(buffer);
  return loaded;
}

// Lines as Ruby 3.1 writes them (taken from a real dump, addresses shortened).
const std::string kRuby31 =
    R"({"type":"ROOT", "root":"vm", "references":["0x1000", "0x1028"]})" "\n"
    R"({"type":"ROOT", "root":"machine_context", "references":["0x1050", "0xdead0"]})" "\n"
    R"({"address":"0x1000", "type":"CLASS", "class":"0x1078", "superclass":"0x10a0", "name":"Customer", "references":["0x1028"], "memsize":920, "flags":{"wb_protected":true, "old":true, "uncollectible":true, "marked":true}})" "\n"
    R"({"address":"0x1028", "type":"STRING", "class":"0x1000", "frozen":true, "embedded":true, "fstring":true, "bytesize":4, "value":"a\"b\n", "encoding":"UTF-8", "file":"/app/models/customer.rb", "line":12, "method":"new", "generation":7, "memsize":40, "flags":{"wb_protected":true, "pinned":true}})" "\n"
    R"({"address":"0x1050", "type":"IMEMO", "class":"0x1028", "imemo_type":"callcache", "file":null, "memsize":40, "flags":{"marking":true}})" "\n"
    R"({"address":"0x1078", "type":"CLASS", "class":"0x10a0", "superclass":"0x10a0", "real_class_name":"Class", "singleton":true, "memsize":480})" "\n"
    R"({"address":"0x10a0", "type":"DATA", "class":"0x1078", "struct":"proc", "references":["0x1000", "0xbeef0"], "memsize":80, "shared":true})" "\n";

TEST(Reader, ReadsEveryFieldOfRuby31Lines) {
  Heap heap = load_text(kRuby31);
  ASSERT_EQ(heap.size(), 5u);
  EXPECT_EQ(heap.lines, 7u);
  EXPECT_EQ(heap.bad_line_count, 0u);
  EXPECT_EQ(heap.input_bytes, kRuby31.size());

  ObjectId klass = heap.find(0x1000), str = heap.find(0x1028), imemo = heap.find(0x1050);
  ObjectId meta = heap.find(0x1078), data = heap.find(0x10a0);
  EXPECT_EQ(klass, 0u);
  EXPECT_EQ(data, 4u);
  EXPECT_EQ(heap.find(0x2000), kNoObject);

  EXPECT_EQ(heap.type[klass], ObjectType::kClass);
  EXPECT_EQ(heap.memsize[klass], 920u);
  EXPECT_EQ(heap.flags[klass], kFlagWbProtected | kFlagOld | kFlagUncollectible | kFlagMarked);
  EXPECT_EQ(heap.class_of[klass], meta);
  EXPECT_EQ(heap.class_label(str), "Customer");
  EXPECT_EQ(heap.class_label(klass), "Class");  // real_class_name of its singleton class
  EXPECT_EQ(heap.class_label(imemo), "(IMEMO:callcache)");
  EXPECT_EQ(heap.class_label(data), "Class (proc)");  // DATA: with its C struct
  // Classes and modules are called by their own name, not their class's.
  EXPECT_EQ(heap.object_label(klass), "Customer");
  EXPECT_EQ(heap.object_label(meta), "#<Class:0x1078> (singleton class of a Class)");
  EXPECT_EQ(heap.object_label(str), "Customer");

  EXPECT_EQ(heap.type[str], ObjectType::kString);
  EXPECT_EQ(heap.flags[str], kFlagWbProtected | kFlagPinned | kFlagFrozen | kFlagEmbedded | kFlagFstring);
  EXPECT_EQ(heap.site_label(str), "/app/models/customer.rb:12");
  EXPECT_EQ(heap.generation[str], 7u);
  EXPECT_EQ(heap.generation[klass], kNoGeneration);
  EXPECT_EQ(heap.site_label(imemo), "");  // "file":null
  EXPECT_EQ(heap.flags[imemo], kFlagMarking);
  EXPECT_EQ(heap.str(heap.detail[imemo]), "callcache");
  EXPECT_EQ(heap.str(heap.detail[data]), "proc");
  EXPECT_EQ(heap.flags[meta], kFlagSingleton);
  EXPECT_EQ(heap.flags[data], kFlagShared);
  EXPECT_EQ(heap.slot_size[str], 0u);

  ASSERT_EQ(heap.references(klass).size(), 1u);
  EXPECT_EQ(heap.references(klass)[0], str);
  ASSERT_EQ(heap.references(data).size(), 1u);  // 0xbeef0 is not in the dump
  EXPECT_EQ(heap.references(data)[0], klass);
  EXPECT_EQ(heap.dangling_references, 2u);      // 0xbeef0 and the root's 0xdead0

  ASSERT_EQ(heap.roots.size(), 2u);
  EXPECT_EQ(heap.str(heap.roots[0].kind), "vm");
  EXPECT_EQ(heap.roots[0].targets, (std::vector<ObjectId>{klass, str}));
  EXPECT_EQ(heap.str(heap.roots[1].kind), "machine_context");
  EXPECT_EQ(heap.roots[1].targets, (std::vector<ObjectId>{imemo}));
}

TEST(Reader, ReadsRuby27AndRuby33To34Variants) {
  // 2.7: no real_class_name, method and generation present. 3.2+: slot_size, shape_id.
  // 3.3+: SHAPE lines. Unknown fields and types must not break the reader.
  std::string text =
      R"({"address":"0x7f00", "type":"OBJECT", "class":"0x7f28", "ivars":3, "file":"a.rb", "line":3, "method":"initialize", "generation":12, "memsize":40, "flags":{"wb_protected":true}})" "\n"
      R"({"address":"0x7f28", "type":"CLASS", "shape_id":5, "slot_size":160, "class":"0x7f50", "name":"Foo", "memsize":1000, "flags":{"wb_protected":true, "old":true}})" "\n"
      R"({"address":"0x7f50", "type":"SHAPE", "id":5, "parent_id":4, "depth":2, "shape_type":"IVAR", "edge_name":"@a", "edges":0, "memsize":48})" "\n"
      R"({"type":"SHAPE", "id":6, "memsize":16})" "\n"
      R"({"address":"0x7f78", "type":"BRAND_NEW_TYPE", "slot_size":80, "memsize":80, "some_new_field":{"nested":[1,2,{"x":null}]}})" "\n";
  Heap heap = load_text(text);
  ASSERT_EQ(heap.size(), 3u);
  EXPECT_EQ(heap.shape_count, 2u);
  EXPECT_EQ(heap.shape_memsize, 64u);
  EXPECT_EQ(heap.class_label(0), "Foo");
  EXPECT_EQ(heap.slot_size[1], 160u);
  EXPECT_EQ(heap.slot_size[2], 80u);
  EXPECT_EQ(heap.type[2], ObjectType::kUnknown);
  EXPECT_EQ(heap.class_of[1], kNoObject);  // its class is a SHAPE line here: not an object
  EXPECT_EQ(heap.class_label(2), "(UNKNOWN)");
  EXPECT_EQ(heap.site_label(0), "a.rb:3");
}

// ObjectSpace.dump_all(full: true) also lists empty slots, as Ruby 3.4.5 writes them: "NONE",
// with the next slot of the free list as "class". They are not objects: before, each was an
// UNKNOWN object and, by its "class", a class group of its own.
TEST(Reader, FreeSlotsOfAFullDumpAreCountedNotObjects) {
  std::string text = kRuby31 +
      R"({"address":"0x2000", "type":"NONE", "shape_id":0, "slot_size":40})" "\n"
      R"({"address":"0x2028", "type":"NONE", "shape_id":0, "slot_size":40, "class":"0x2000"})" "\n"
      R"({"address":"0x2050", "type":"NONE", "shape_id":0, "slot_size":40, "class":"0x1000"})" "\n";
  Heap heap = load_text(text);
  EXPECT_EQ(heap.size(), 5u);  // kRuby31's objects
  EXPECT_EQ(heap.free_slot_count, 3u);
  EXPECT_EQ(heap.dangling_references, 2u);  // kRuby31's own two, none from the free list
  for (ObjectId id = 0; id < heap.size(); ++id) EXPECT_NE(heap.type[id], ObjectType::kUnknown) << id;
}

// dump_all(since: GEN) writes objects and no ROOT line: nothing can be reached from a root,
// which the reader says instead of a report of zeros that looks like a heap of garbage.
TEST(Reader, ADumpWithoutRootLinesIsNamedSo) {
  std::string objects = kRuby31.substr(kRuby31.find(R"({"address")"));
  LoadedWithWarnings loaded = load_with_warnings(objects);
  ASSERT_TRUE(loaded.heap.ok()) << loaded.heap.message();
  EXPECT_TRUE(loaded.heap->roots.empty());
  EXPECT_NE(loaded.printed.find("memprof: warning: x.json: the dump has no ROOT lines "
                                "(ObjectSpace.dump_all(since:) writes none): no object is reachable "
                                "from a root, and retained sizes are 0\n"),
            std::string::npos)
      << loaded.printed;
  EXPECT_EQ(load_with_warnings(kRuby31).printed.find("no ROOT lines"), std::string::npos);
}

TEST(Reader, ReadsTheFieldsRuby34Added) {
  // Lines as Ruby 3.4.5 writes them: "chilled" string literals (a flag of their own, next to
  // "frozen"), "coderange", a call cache's "called_id" and "receiver_class" (an address that is
  // not a reference: the cache holds its class weakly), a class's "variation_count".
  std::string text =
      R"({"address":"0x7f9ffb24ff48", "type":"STRING", "shape_id":0, "slot_size":40, "class":"0x7f9ffb2dec48", "embedded":true, "chilled":true, "bytesize":1, "value":"w", "encoding":"UTF-8", "coderange":"7bit", "file":"probe.rb", "line":7, "generation":1, "memsize":40, "flags":{"wb_protected":true}})" "\n"
      R"({"address":"0x7f9ffb2c47d0", "type":"IMEMO", "shape_id":0, "slot_size":40, "imemo_type":"callcache", "called_id":"inherited", "receiver_class":"0x7f9ffb2dec48", "memsize":40, "flags":{"wb_protected":true}})" "\n"
      R"({"address":"0x7f9ffb2dec48", "type":"CLASS", "shape_id":0, "slot_size":160, "variation_count":0, "name":"String", "memsize":4608, "flags":{"wb_protected":true, "old":true}})" "\n";
  Heap heap = load_text(text);
  ASSERT_EQ(heap.size(), 3u);
  EXPECT_EQ(heap.flags[0], kFlagWbProtected | kFlagEmbedded | kFlagChilled);
  EXPECT_EQ(heap.class_label(0), "String");
  EXPECT_EQ(heap.generation[0], 1u);
  EXPECT_EQ(heap.str(heap.detail[1]), "callcache");
  EXPECT_TRUE(heap.references(1).empty());
  EXPECT_EQ(heap.slot_size[2], 160u);
  EXPECT_EQ(heap.bad_value_count, 0u);
  EXPECT_EQ(heap.dangling_references, 0u);
}

TEST(Reader, ReportsBadLinesWithNumbersAndGoesOn) {
  std::string text = object_line(0x10, "STRING", 0, {}, 40) +
                     R"({"address":"0x20", "type":"STR)" "\n" +          // 2: truncated
                     "not json at all\n" +                                 // 3
                     R"({"type":"STRING", "memsize":40})" "\n" +          // 4: no address
                     R"({"address":"zz", "type":"STRING"})" "\n" +        // 5
                     "[1, 2, 3]\n" +                                       // 6
                     "\n" +                                                // 7: blank, fine
                     R"({"address":"0x30", "references":"0x10"})" "\n" +  // 8: value skipped
                     R"({"address":"0x40", "memsize":-5})" "\n" +         // 9: value skipped
                     R"({"address":"0x50", "flags":{"old":1}})" "\n" +    // 10: value skipped
                     object_line(0x60, "ARRAY", 0, {0x10}, 40);            // 11
  Heap heap = load_text(text);
  EXPECT_EQ(heap.size(), 5u);
  EXPECT_EQ(heap.lines, 11u);
  ASSERT_EQ(heap.bad_line_count, 5u);
  std::vector<std::pair<uint64_t, std::string>> bad;
  for (const BadLine& line : heap.bad_lines) bad.emplace_back(line.line_number, line.message);
  EXPECT_EQ(bad, (std::vector<std::pair<uint64_t, std::string>>{
                     {2, "invalid JSON"},
                     {3, "invalid JSON"},
                     {4, "missing address"},
                     {5, "address is not a hex string"},
                     {6, "not a JSON object"},
                 }));
  // One bad value costs the value, not the line.
  ASSERT_EQ(heap.bad_value_count, 3u);
  std::vector<std::tuple<uint64_t, std::string, std::string>> values;
  for (const BadLine& v : heap.bad_values) values.emplace_back(v.line_number, v.message, v.consequence);
  EXPECT_EQ(values, (std::vector<std::tuple<uint64_t, std::string, std::string>>{
                        {8, R"(object 0x30: references "0x10" is not an array)", "value skipped"},
                        {9, "object 0x40: memsize -5 is not a non-negative integer", "value skipped"},
                        {10, "object 0x50: flags.old 1 is not a boolean", "value skipped"},
                    }));
  EXPECT_EQ(heap.memsize[heap.find(0x40)], 0u);
  EXPECT_EQ(heap.flags[heap.find(0x50)], 0u);
  // The bad lines' references were dropped: the ARRAY references the STRING only.
  EXPECT_EQ(heap.ref_targets, (BigVector<ObjectId>{0}));
}

TEST(Reader, AMemsizeLargerThanAnAddressSpaceIsABadValueNotAWrappedTotal) {
  // Before: 2^64-1 and 41 summed to 40 bytes.
  std::string text = R"({"address":"0x10", "type":"STRING", "memsize":18446744073709551615})" "\n" +
                     object_line(0x20, "STRING", 0, {}, 41) +
                     R"({"address":"0x30", "type":"STRING", "memsize":140737488355328})" "\n";
  Heap heap = load_text(text);
  ASSERT_EQ(heap.bad_value_count, 1u);
  EXPECT_EQ(heap.bad_values[0].message,
            "object 0x10: memsize 18446744073709551615 is larger than a process's address space");
  EXPECT_EQ(heap.memsize[heap.find(0x10)], 0u);
  EXPECT_EQ(heap.memsize[heap.find(0x30)], uint64_t{1} << 47);  // 128 TB: the largest there can be
}

TEST(Reader, OneBadReferenceKeepsTheRestOfTheRootLine) {
  // A vm root with a reference that is not an address and one that is not a string: losing the
  // whole line would leave both objects unreachable.
  std::string text = R"({"type":"ROOT", "root":"vm", "references":["0x10", "0xzz", 7, "0x20"]})" "\n" +
                     object_line(0x10, "STRING", 0, {}, 40) +
                     object_line(0x20, "ARRAY", 0, {0x10, 0x30}, 40) +
                     R"({"address":"0x30", "type":"ARRAY", "references":["0x10", null], "memsize":40})" "\n";
  auto [heap, printed] = load_with_warnings(text);
  ASSERT_TRUE(heap.ok()) << heap.message();
  ASSERT_EQ(heap->roots.size(), 1u);
  EXPECT_EQ(heap->roots[0].targets, (std::vector<ObjectId>{0, 1}));
  EXPECT_EQ(heap->references(2).size(), 1u);
  EXPECT_EQ(printed,
            "memprof: x.json:1: ROOT \"vm\": references[1] \"0xzz\" is not an address (value "
            "skipped; the root's other 2 references are kept)\n"
            "memprof: x.json:1: ROOT \"vm\": references[2] 7 is not an address (value skipped; the "
            "root's other 2 references are kept)\n"
            "memprof: x.json:4: object 0x30: references[1] null is not an address (value skipped; "
            "the object's other 1 reference is kept)\n");
}

TEST(Reader, AnUnreadableRootLineSaysTheRootIsLost) {
  std::string text = R"({"type":"ROOT", "root":"vm", "references":["0x10", "0x2)" "\n" +
                     object_line(0x10, "STRING", 0, {}, 40);
  auto [heap, printed] = load_with_warnings(text);
  ASSERT_TRUE(heap.ok()) << heap.message();
  EXPECT_EQ(printed,
            "memprof: x.json:1: invalid JSON (ROOT line \"vm\" skipped: the objects it references "
            "lose this root; reachability and retained sizes are incomplete)\n"
            "memprof: warning: x.json: 1 ROOT line could not be read (the objects they reference "
            "lose that root; reachability and retained sizes are incomplete)\n");
}

TEST(Reader, SkipsAByteOrderMarkBeforeTheFirstLine) {
  auto [heap, printed] = load_with_warnings("\xEF\xBB\xBF" + kRuby31);
  ASSERT_TRUE(heap.ok()) << heap.message();
  // No line skipped; kRuby31 has two references to objects it does not hold.
  EXPECT_EQ(printed,
            "memprof: warning: x.json: 2 references point to addresses no object line has "
            "(dropped; a truncated or partial dump?)\n");
  ASSERT_EQ(heap->roots.size(), 2u);
  EXPECT_EQ(heap->roots[0].targets.size(), 2u);
  EXPECT_EQ(heap->size(), 5u);
}

TEST(Reader, ReadsFileNamesThatAreNotUtf8) {
  // Ruby writes a file name as the bytes it has: here Latin-1 "café.rb".
  std::string text = root_line("vm", {0x10}) +
                     object_line(0x10, "STRING", 0, {}, 40, R"(, "file":"/app/caf)" "\xE9" R"(.rb", "line":3)") +
                     object_line(0x20, "STRING", 0, {}, 40);
  auto [heap, printed] = load_with_warnings(text);
  ASSERT_TRUE(heap.ok()) << heap.message();
  ASSERT_EQ(heap->size(), 2u);
  EXPECT_EQ(heap->site_label(0), "/app/caf\xEF\xBF\xBD.rb:3");
  EXPECT_EQ(printed,
            "memprof: warning: x.json: 1 line holds bytes that are not UTF-8 (read with U+FFFD in "
            "their place; Ruby writes file names as raw bytes)\n");
}

// Ruby writes an allocation's file name unescaped: objects made in a file under a directory
// named `x"q\d` were lines of invalid JSON, skipped whole with their references (60 objects of a
// helper's app). Read exactly, without a warning; in a name that is not UTF-8 either, too.
TEST(Reader, ReadsFileNamesWithQuotesAndBackslashesAsRubyWritesThem) {
  std::string text = root_line("vm", {0x10, 0x20}) +
                     object_line(0x10, "STRING", 0, {0x20}, 40, R"(, "file":"/app/x"q\d/a.rb", "line":3)") +
                     object_line(0x20, "ARRAY", 0, {}, 40, ", \"file\":\"/app/\t\"\xE9.rb\", \"line\":4");
  auto [heap, printed] = load_with_warnings(text);
  ASSERT_TRUE(heap.ok()) << heap.message();
  ASSERT_EQ(heap->size(), 2u);
  EXPECT_EQ(heap->site_label(0), "/app/x\"q\\d/a.rb:3");
  EXPECT_EQ(heap->site_label(1), "/app/\t\"\xEF\xBF\xBD.rb:4");
  EXPECT_EQ(heap->ref_begin[1] - heap->ref_begin[0], 1u);
  EXPECT_EQ(printed,
            "memprof: warning: x.json: 1 line holds bytes that are not UTF-8 (read with U+FFFD in "
            "their place; Ruby writes file names as raw bytes)\n");
}

TEST(Reader, WarnsAboutDuplicateAddressesAndReferencesToAbsentObjects) {
  std::string text = root_line("vm", {0x10, 0x99}) + object_line(0x10, "STRING", 0, {}, 40) +
                     object_line(0x10, "ARRAY", 0, {0x77, 0x88}, 80);
  auto [heap, printed] = load_with_warnings(text);
  ASSERT_TRUE(heap.ok()) << heap.message();
  EXPECT_EQ(printed,
            "memprof: warning: x.json: 1 object line repeats the address of an earlier one "
            "(references go to the first object with the address)\n"
            "memprof: warning: x.json: 3 references point to addresses no object line has "
            "(dropped; a truncated or partial dump?)\n");
}

// Counts in warnings have thousands separators, as the report's do.
TEST(Reader, CountsInWarningsAreGroupedByThousands) {
  std::vector<uint64_t> absent(1234);
  for (size_t i = 0; i < absent.size(); ++i) absent[i] = 0x1000 + 8 * i;
  auto [heap, printed] = load_with_warnings(root_line("vm", {0x10}) + object_line(0x10, "ARRAY", 0, absent, 40));
  ASSERT_TRUE(heap.ok()) << heap.message();
  EXPECT_EQ(printed,
            "memprof: warning: x.json: 1,234 references point to addresses no object line has "
            "(dropped; a truncated or partial dump?)\n");
}

TEST(Reader, RejectsADumpWithoutObjects) {
  auto roots_only = load_bytes(root_line("vm", {0x10}) + root_line("machine_context", {}) + "{oops\n");
  ASSERT_FALSE(roots_only.ok());
  EXPECT_EQ(roots_only.message(),
            "test.json: no objects in the dump (2 ROOT lines, 0 SHAPE lines, 1 line skipped)");
}

TEST(Reader, WarnsOnStreamWithDumpNameAndLine) {
  std::string text = root_line("vm", {0x10}) + object_line(0x10, "STRING", 0, {}, 40) + "{oops\n";
  auto [heap, printed] = load_with_warnings(text);
  ASSERT_TRUE(heap.ok());
  EXPECT_EQ(printed, "memprof: x.json:3: invalid JSON (line skipped)\n");
}

TEST(Reader, PrintsTwentyWarningsThenOneSummaryLine) {
  std::string text = root_line("vm", {0x10}) + object_line(0x10, "STRING", 0, {}, 40);
  for (int i = 0; i < 30; ++i) text += "{broken\n";
  auto [heap, printed] = load_with_warnings(text);
  ASSERT_TRUE(heap.ok());
  EXPECT_EQ(heap->bad_line_count, 30u);
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 21);
  EXPECT_TRUE(printed.starts_with("memprof: x.json:3: invalid JSON (line skipped)\n"));
  EXPECT_TRUE(printed.ends_with("memprof: x.json:22: invalid JSON (line skipped)\n"
                                "memprof: x.json: more bad lines and values skipped, not shown\n"));
}

TEST(Reader, HandlesCrlfMissingFinalNewlineAndLinesLongerThanTheBuffer) {
  std::vector<uint64_t> many;
  for (uint64_t i = 0; i < 200000; ++i) many.push_back(0x1000 + 8 * (i % 3));
  std::string big = object_line(0x100, "ARRAY", 0, many, 1600040);
  ASSERT_GT(big.size(), 1u << 20);  // longer than the 1 MB read chunk
  std::string text = object_line(0x1000, "STRING", 0, {}, 40);
  text.insert(text.size() - 1, "\r");
  text += big + object_line(0x1008, "STRING", 0, {}, 40) + object_line(0x1010, "STRING", 0, {}, 40);
  text.pop_back();  // no final newline
  Heap heap = load_text(text);
  ASSERT_EQ(heap.size(), 4u);
  EXPECT_EQ(heap.bad_line_count, 0u);
  EXPECT_EQ(heap.references(1).size(), 200000u);
  EXPECT_EQ(heap.references(1)[199999], heap.find(0x1000 + 8 * (199999 % 3)));
  EXPECT_EQ(heap.memsize[3], 40u);
}

// A singleton class is named for what it belongs to, as Ruby names it: the object among its
// references whose class it is (an IMEMO's "class" is its owner, not its class). Before: every
// one was "#<Class:0x...> (singleton class of a Class)".
TEST(Reader, NamesSingletonClassesForWhatTheyBelongTo) {
  const std::string singleton = R"(, "real_class_name":"Class", "singleton":true)";
  std::string text = object_line(0x100, "CLASS", 0x200, {}, 480, R"(, "name":"Node")") +
                     object_line(0x200, "CLASS", 0xa00, {0x100}, 480, singleton) +
                     object_line(0xa00, "CLASS", 0x300, {0x200}, 480, singleton) +
                     object_line(0x300, "CLASS", 0, {}, 480, R"(, "name":"Class")") +
                     object_line(0x400, "OBJECT", 0x500, {}, 40) +
                     object_line(0x500, "CLASS", 0x300, {0x600, 0x400}, 480,
                                 R"(, "real_class_name":"Object", "singleton":true)") +
                     object_line(0x600, "OBJECT", 0x700, {}, 40) +
                     object_line(0x700, "CLASS", 0x300, {}, 480, R"(, "name":"Object")") +
                     object_line(0x800, "IMEMO", 0x900, {}, 40, R"(, "imemo_type":"ment")") +
                     object_line(0x900, "CLASS", 0x300, {0x800}, 480, singleton);
  Heap heap = load_text(text);
  EXPECT_EQ(heap.object_label(heap.find(0x200)), "#<Class:Node>");
  EXPECT_EQ(heap.object_label(heap.find(0xa00)), "#<Class:#<Class:Node>>");
  EXPECT_EQ(heap.object_label(heap.find(0x500)), "#<Class:#<Object>>");
  EXPECT_EQ(heap.object_label(heap.find(0x900)), "#<Class:0x900> (singleton class of a Class)");
}

TEST(Reader, DetectsGzipZstdAndXzByMagicAndReadsTheSameHeap) {
  std::string text = kRuby31;
  for (int i = 0; i < 2000; ++i) text += object_line(0x100000 + 40 * i, "STRING", 0x1000, {0x1000}, 40);
  Heap plain = load_text(text);
  for (const std::string& packed : {gzip(text), zstd(text), xz(text), gzip(text.substr(0, 1000)) + gzip(text.substr(1000)),
                                    xz(text.substr(0, 1000)) + xz(text.substr(1000))}) {
    auto heap = load_bytes(packed);
    ASSERT_TRUE(heap.ok()) << heap.message();
    EXPECT_EQ(heap->size(), plain.size());
    EXPECT_EQ(heap->address, plain.address);
    EXPECT_EQ(heap->ref_targets, plain.ref_targets);
    EXPECT_EQ(heap->input_bytes, text.size());
  }
  EXPECT_EQ(detect_compression({}), Compression::kNone);
}

// Bytes after the last gzip member that begin no other one (a tar's zero padding) are ignored
// with a warning, as gzip -d does; the dump was refused as a corrupt stream before.
TEST(Reader, IgnoresAndSaysTrailingBytesAfterGzipData) {
  std::string text = root_line("vm", {0x10}) + object_line(0x10, "STRING", 0, {}, 40);
  auto [heap, printed] = load_with_warnings(gzip(text) + std::string(512, '\0'));
  ASSERT_TRUE(heap.ok()) << heap.message();
  EXPECT_EQ(heap->size(), 1u);
  EXPECT_EQ(printed, "memprof: warning: x.json: 512 bytes after the end of the compressed data ignored "
                     "(not another gzip member: trailing garbage, as gzip -d says)\n");
}

// Two dumps in one file (cat a.json b.json, or one process's dumps appended) are said: each has
// its one "vm" ROOT line. They were read as one heap without a word.
TEST(Reader, SaysWhenTheFileHoldsSeveralDumps) {
  std::string one = root_line("vm", {0x10}) + object_line(0x10, "STRING", 0, {}, 40);
  std::string two = root_line("vm", {0x20}) + object_line(0x20, "STRING", 0, {}, 40);
  auto [heap, printed] = load_with_warnings(one + two);
  ASSERT_TRUE(heap.ok()) << heap.message();
  EXPECT_EQ(printed, "memprof: warning: x.json: the file holds 2 dumps (2 \"vm\" ROOT lines, one per dump: "
                     "concatenated, or written into one file twice); they are read as one heap\n");
  EXPECT_EQ(load_with_warnings(one).printed, "");
}

// A compressed dump cut off (a copy or a transfer that stopped) is read up to the cut, as a plain
// file cut short is, and the reader says where the stream ended: it was refused whole
// ("truncated gzip stream"), so a 2 GB dump missing its last kilobytes told nothing.
TEST(Reader, ReadsACompressedDumpCutShortUpToTheCut) {
  std::string text = root_line("vm", {0x10});
  constexpr uint64_t kObjects = 20'000;
  for (uint64_t i = 0; i < kObjects; ++i) text += object_line(0x10 + i * 0x28, "STRING", 0, {}, 40);
  for (auto& [format, packed] : {std::pair{"gzip", gzip(text)}, std::pair{"zstd", zstd(text)}, std::pair{"xz", xz(text)}}) {
    SCOPED_TRACE(format);
    auto [heap, printed] = load_with_warnings(packed.substr(0, packed.size() / 2));
    ASSERT_TRUE(heap.ok()) << heap.message();
    EXPECT_EQ(heap->cut_short, fmt::format("truncated {} stream", format));
    // Every object before the cut, in order, and none after it (the cut line is skipped).
    ASSERT_GT(heap->size(), 0u);
    EXPECT_LT(heap->size(), kObjects);
    for (ObjectId id = 0; id < heap->size(); ++id) ASSERT_EQ(heap->address[id], 0x10 + id * 0x28);
    // The objects are the whole lines of what was decompressed (the ROOT line first).
    ASSERT_LT(heap->input_bytes, text.size());
    const std::string read = text.substr(0, heap->input_bytes);
    EXPECT_EQ(heap->size(), static_cast<size_t>(std::ranges::count(read, '\n')) - 1);
    EXPECT_NE(printed.find(fmt::format("memprof: warning: x.json: truncated {} stream after {} of the dump: what "
                                       "came before is read, the rest is missing (objects, references, roots)\n",
                                       format, byte_count_text(heap->input_bytes))),
              std::string::npos)
        << printed;
  }
}

// A plain dump cut off mid-line (its last line does not parse and has no '\n', which Ruby writes
// after every line) says so, read from a file (in blocks, on several threads) or as a stream; a
// last line that is whole without its '\n', or a bad line with one, is no cut.
TEST(Reader, SaysWhenAPlainDumpIsCutOffInTheMiddleOfALine) {
  std::string whole = root_line("vm", {0x10});
  for (uint64_t i = 0; i < 3000; ++i) whole += object_line(0x10 + i * 0x28, "STRING", 0, {}, 40);
  const std::string cut = whole.substr(0, whole.size() / 2 + 17);
  ASSERT_NE(cut.back(), '\n');
  const std::string path = ::testing::TempDir() + "memprof_cut." + std::to_string(::getpid()) + ".json";
  auto from_file = [&](const std::string& text) {
    { std::ofstream(path, std::ios::binary) << text; }
    return load_heap(path, {.block_size = 4096});
  };
  for (auto& heap : {from_file(cut), load_bytes(cut)}) {
    ASSERT_TRUE(heap.ok()) << heap.message();
    EXPECT_EQ(heap->cut_short, "cut off in the middle of a line");
    EXPECT_EQ(heap->bad_line_count, 1u);
  }
  const std::string without_last_newline = whole.substr(0, whole.size() - 1);
  const std::string bad_last_line = whole + "{\"address\":\n";
  for (const std::string& text : {whole, without_last_newline, bad_last_line}) {
    for (auto& heap : {from_file(text), load_bytes(text)}) {
      ASSERT_TRUE(heap.ok()) << heap.message();
      EXPECT_EQ(heap->cut_short, "");
      EXPECT_EQ(heap->size(), 3000u);
    }
  }
  ::unlink(path.c_str());
}

// Cut before it gave a byte, a stream is no dump at all; damaged, it is refused (a decoder may
// give wrong bytes before it sees the damage, and they would read as objects).
TEST(Reader, RejectsBrokenCompressedStreams) {
  std::string text = kRuby31;
  std::string packed = gzip(text);
  auto truncated = load_bytes(packed.substr(0, 12));
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.message(), "test.json: truncated gzip stream");

  std::string bad_zstd = std::string("\x28\xb5\x2f\xfd") + "this is no zstd frame header";
  auto corrupt = load_bytes(bad_zstd);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_TRUE(corrupt.message().starts_with("test.json: corrupt zstd stream (")) << corrupt.message();
  std::string bad_gzip = packed;
  bad_gzip[3] = '\xff';  // reserved flag bits set: not a valid gzip header
  auto corrupt_gzip = load_bytes(bad_gzip);
  ASSERT_FALSE(corrupt_gzip.ok());
  EXPECT_TRUE(corrupt_gzip.message().starts_with("test.json: corrupt gzip stream (")) << corrupt_gzip.message();

  auto cut = load_bytes(zstd(text).substr(0, 10));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.message(), "test.json: truncated zstd stream");

  std::string packed_xz = xz(text);
  auto cut_xz = load_bytes(packed_xz.substr(0, 16));
  ASSERT_FALSE(cut_xz.ok());
  EXPECT_EQ(cut_xz.message(), "test.json: truncated xz stream");
  packed_xz[packed_xz.size() / 2] ^= 0x55;  // the compressed data, past the stream header
  auto corrupt_xz = load_bytes(packed_xz);
  ASSERT_FALSE(corrupt_xz.ok());
  EXPECT_TRUE(corrupt_xz.message().starts_with("test.json: corrupt xz stream (")) << corrupt_xz.message();

  // A stream whose dictionary is larger than the decoder's limit (1.5 GB; the limit is 256 MB).
  std::string big_dictionary(lzma_stream_buffer_bound(text.size()), '\0');
  lzma_options_lzma options;
  ASSERT_FALSE(lzma_lzma_preset(&options, 3));
  options.dict_size = 1536u << 20;
  lzma_filter filters[] = {{LZMA_FILTER_LZMA2, &options}, {LZMA_VLI_UNKNOWN, nullptr}};
  size_t written = 0;
  ASSERT_EQ(lzma_stream_buffer_encode(filters, LZMA_CHECK_CRC64, nullptr,
                                      reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                      reinterpret_cast<uint8_t*>(big_dictionary.data()), &written,
                                      big_dictionary.size()),
            LZMA_OK);
  big_dictionary.resize(written);
  auto too_big = load_bytes(big_dictionary);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.message(), "test.json: corrupt xz stream (needs more than 256 MB of memory to decode)");
}

TEST(Reader, RefusesBzip2WithTheCommandThatDecompressesIt) {
  auto bzip2 = load_bytes("BZh91AY&SY this would be bzip2 data");
  ASSERT_FALSE(bzip2.ok());
  EXPECT_EQ(bzip2.message(), "test.json: bzip2-compressed; memprof reads plain, gzip, zstd and xz dumps "
                             "(bzip2 -dk test.json writes the plain one)");
}

TEST(Reader, RejectsEmptyInputAndNonDumps) {
  auto empty = load_bytes("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.message(), "test.json: empty file");
  auto blank = load_bytes("\n \n\t\n");
  ASSERT_FALSE(blank.ok());
  EXPECT_EQ(blank.message(), "test.json: empty file");
  auto text = load_bytes("hello\nworld\n");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.message(), "test.json: not a heap dump (line 1: invalid JSON)");
  auto json = load_bytes("\n{\"name\":\"package.json\"}\n");
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.message(), "test.json: not a heap dump (line 2: missing address)");
  auto missing = load_heap("/nonexistent/dump.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.message(), "/nonexistent/dump.json: No such file or directory");
}

TEST(Reader, PlainFilesReadInParallelBlocksGiveTheSameHeap) {
  // Lines of very different lengths (some longer than a block), a bad line, CRLF, blank lines
  // and no final newline: every block boundary case, read with pread by worker threads.
  std::string text = root_line("vm", {0x1000});
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint64_t> refs(static_cast<size_t>(i % 7 == 0 ? 900 : i % 5), 0x1000 + 40 * static_cast<uint64_t>(i / 2));
    text += object_line(0x1000 + 40 * static_cast<uint64_t>(i), "STRING", 0, refs, 40 + static_cast<uint64_t>(i));
    if (i == 1234) text += "{\"address\":\"0x5\", \"type\":\n";
    if (i == 2000) text += "\r\n\n";
  }
  text.pop_back();
  Heap expected = load_text(text);
  std::string path = ::testing::TempDir() + "memprof_blocks." + std::to_string(::getpid()) + ".json";
  { std::ofstream(path, std::ios::binary) << text; }
  for (size_t block_size : {size_t{1000}, size_t{4096}, size_t{65536}, size_t{4} << 20}) {
    auto heap = load_heap(path, {.block_size = block_size});
    ASSERT_TRUE(heap.ok()) << heap.message();
    EXPECT_EQ(heap->lines, expected.lines) << block_size;
    EXPECT_EQ(heap->input_bytes, text.size());
    EXPECT_EQ(heap->address, expected.address) << block_size;
    EXPECT_EQ(heap->memsize, expected.memsize) << block_size;
    EXPECT_EQ(heap->ref_begin, expected.ref_begin) << block_size;
    EXPECT_EQ(heap->ref_targets, expected.ref_targets) << block_size;
    ASSERT_EQ(heap->bad_lines.size(), 1u) << block_size;
    EXPECT_EQ(heap->bad_lines[0].line_number, expected.bad_lines[0].line_number);
    EXPECT_EQ(heap->bad_lines[0].message, "invalid JSON");
  }
  EXPECT_EQ(expected.bad_lines[0].line_number, 1237u);  // ROOT + 1235 objects, then the bad one
  std::remove(path.c_str());
}

TEST(Reader, LinesLongerThanASliceAreReadWhole) {
  // Lines longer than the slice a worker reads at a time (file_blocks.h) are read whole, the
  // slice already read kept; the last one ends the file, with no final newline (on a page
  // boundary, which mattered when such lines were parsed from a mapping).
  const size_t long_refs = kSliceBytes / 8;  // each reference takes 10 bytes or more
  std::string text = root_line("vm", {0x1000});
  for (int i = 0; i < 40; ++i) {
    std::vector<uint64_t> refs(i % 3 == 0 ? long_refs : 2, 0x1000 + 40 * static_cast<uint64_t>(i / 2));
    text += object_line(0x1000 + 40 * static_cast<uint64_t>(i), "ARRAY", 0, refs, 40 + static_cast<uint64_t>(i));
  }
  std::string last = object_line(0x9000, "ARRAY", 0, std::vector<uint64_t>(long_refs, 0x1000), 40);
  ASSERT_GT(last.size(), kSliceBytes);
  last.pop_back();  // no final newline
  text += last;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  // Pads the last line inside its JSON (spaces before the closing brace) to end on a page.
  text.insert(text.size() - 1, (page - text.size() % page) % page, ' ');
  ASSERT_EQ(text.size() % page, 0u);
  Heap expected = load_text(text);
  std::string path = ::testing::TempDir() + "memprof_long_lines." + std::to_string(::getpid()) + ".json";
  { std::ofstream(path, std::ios::binary) << text; }
  for (size_t block_size : {size_t{4096}, size_t{65536}, size_t{4} << 20}) {
    auto heap = load_heap(path, {.block_size = block_size});
    ASSERT_TRUE(heap.ok()) << heap.message();
    EXPECT_EQ(heap->lines, expected.lines) << block_size;
    EXPECT_EQ(heap->size(), 41u) << block_size;
    EXPECT_EQ(heap->address, expected.address) << block_size;
    EXPECT_EQ(heap->ref_begin, expected.ref_begin) << block_size;
    EXPECT_EQ(heap->ref_targets, expected.ref_targets) << block_size;
    EXPECT_TRUE(heap->bad_lines.empty()) << block_size;
  }
  std::remove(path.c_str());
}

TEST(Reader, ParsesALineWithoutPaddingAfterIt) {
  // ChunkParser accepts lines with fewer than kLinePadding readable bytes after them (simdjson
  // needs them): such a line is parsed from a padded copy, not rejected as invalid JSON.
  const std::string line = object_line(0x10, "ARRAY", 0, {0x20, 0x30}, 40);
  const std::vector<char> exact(line.begin(), line.end());  // nothing readable after it
  ParsedChunk chunk;
  parse_chunk(exact.data(), exact.size(), exact.size(), true, chunk);
  EXPECT_TRUE(chunk.bad_lines.empty());
  EXPECT_EQ(chunk.address, (std::vector<uint64_t>{0x10}));
  EXPECT_EQ(chunk.references, (std::vector<uint64_t>{0x20, 0x30}));
}

TEST(Reader, KeepsTheFirstOfDuplicateAddresses) {
  Heap heap = load_text(object_line(0x10, "STRING", 0, {}, 40) + object_line(0x10, "ARRAY", 0, {}, 80) +
                        object_line(0x20, "ARRAY", 0, {0x10}, 40));
  EXPECT_EQ(heap.size(), 3u);
  EXPECT_EQ(heap.duplicate_addresses, 1u);
  EXPECT_EQ(heap.references(2)[0], 0u);
}

TEST(Reader, ObjectTypeNamesRoundTrip) {
  for (int t = 1; t < kObjectTypeCount; ++t) {
    auto type = static_cast<ObjectType>(t);
    EXPECT_EQ(parse_object_type(object_type_name(type)), type) << object_type_name(type);
  }
  for (std::string_view miss : {"", "STRIN", "STRINGS", "string", "UNKNOWN", "RATIONALS", "T_STRING"}) {
    EXPECT_EQ(parse_object_type(miss), ObjectType::kUnknown) << miss;
  }
}

TEST(Reader, ParsesAddressText) {
  EXPECT_EQ(parse_address_text("0x7f35c85e0010"), 0x7f35c85e0010u);
  EXPECT_EQ(parse_address_text("0XABC"), 0xabcu);
  EXPECT_EQ(parse_address_text("0x"), 0u);
  EXPECT_EQ(parse_address_text("7f35"), 0u);
  EXPECT_EQ(parse_address_text("0x12345678901234567"), 0u);
  EXPECT_EQ(parse_address_text("0x12g4"), 0u);
}

}  // namespace
}  // namespace memprof::heap
