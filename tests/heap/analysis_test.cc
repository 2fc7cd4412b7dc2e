// analyze_heap: totals, group rollups with retained sizes, machine_context-only objects, gems.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <random>
#include <thread>
#include <tuple>

#include "heap/analysis.h"
#include "heap/reachability.h"
#include "test_support.h"

namespace memprof::heap {
namespace {

using testing::load_text;
using testing::object_line;
using testing::root_line;

std::string site(const std::string& file, int line, int generation) {
  return fmt::format(R"(, "file":"{}", "line":{}, "generation":{})", file, line, generation);
}

// vm -> cache (Hash) -> 2 x Entry (OBJECT) -> each a String; machine_context -> a lonely String
// and the cache; an unreachable Entry. Classes: Hash, Entry, String (named CLASS lines).
std::string sample_dump() {
  return root_line("vm", {0x100}) + root_line("machine_context", {0x500, 0x100}) +
         object_line(0x10, "CLASS", 0, {}, 1000, R"(, "name":"Hash")") +
         object_line(0x20, "CLASS", 0, {}, 1000, R"(, "name":"Entry")") +
         object_line(0x30, "CLASS", 0, {}, 1000, R"(, "name":"String")") +
         object_line(0x100, "HASH", 0x10, {0x200, 0x300}, 200, site("/app/cache.rb", 3, 5)) +
         object_line(0x200, "OBJECT", 0x20, {0x210}, 40, site("/app/entry.rb", 7, 6)) +
         object_line(0x210, "STRING", 0x30, {}, 100, site("/usr/lib/ruby/vendor_ruby/rack/utils.rb", 9, 6)) +
         object_line(0x300, "OBJECT", 0x20, {0x310}, 40, site("/app/entry.rb", 7, 6)) +
         object_line(0x310, "STRING", 0x30, {}, 60, site("/gems/json-2.6.1/lib/json.rb", 1, 6)) +
         object_line(0x500, "STRING", 0x30, {}, 33) +
         object_line(0x600, "OBJECT", 0x20, {}, 40, site("/app/entry.rb", 7, 6));
}

const GroupRow* row(const std::vector<GroupRow>& rows, const std::string& name) {
  for (const GroupRow& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(Analysis, TotalsGroupsAndRetainedSizes) {
  Heap heap = load_text(sample_dump());
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  Analysis a = analyze_heap(heap, tree, 2);

  EXPECT_EQ(a.count, 10u);
  EXPECT_EQ(a.memsize, 3000u + 200 + 40 + 100 + 40 + 60 + 33 + 40);
  // The CLASS lines are reachable through their instances' class edges; only the Entry at 0x600
  // is garbage.
  EXPECT_EQ(a.reachable_count, 9u);
  EXPECT_EQ(a.reachable_memsize, a.memsize - 40);
  EXPECT_EQ(a.machine_context_only_count, 1u);  // the String at 0x500
  EXPECT_EQ(a.machine_context_only_memsize, 33u);
  ASSERT_EQ(a.roots.size(), 2u);
  EXPECT_EQ(a.roots[0].kind, "vm");
  EXPECT_EQ(a.roots[1].count, 2u);

  const GroupRow* entry = row(a.by_class, "Entry");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->count, 3u);
  EXPECT_EQ(entry->memsize, 120u);
  EXPECT_EQ(entry->retained, 40u + 100 + 40 + 60);  // each Entry with its String; garbage: 0
  const GroupRow* strings = row(a.by_class, "String");
  ASSERT_NE(strings, nullptr);
  EXPECT_EQ(strings->count, 3u);
  // The String class is reached through 0x210 and 0x310 (under the Hash) and through 0x500
  // (machine_context): no single String dominates it, so only the strings themselves count.
  EXPECT_EQ(strings->retained, 100u + 60 + 33);
  const GroupRow* hash = row(a.by_class, "Hash");
  ASSERT_NE(hash, nullptr);
  // The Hash dominates both Entries, their Strings, its own class and the Entry class.
  EXPECT_EQ(hash->retained, 200u + 40 + 100 + 40 + 60 + 1000 + 1000);

  const GroupRow* site_row = row(a.by_location, "/app/entry.rb:7");
  ASSERT_NE(site_row, nullptr);
  EXPECT_EQ(site_row->count, 3u);
  EXPECT_EQ(site_row->retained, 240u);
  ASSERT_NE(row(a.by_location, std::string(kNoSite)), nullptr);
  EXPECT_EQ(row(a.by_location, std::string(kNoSite))->count, 4u);

  EXPECT_EQ(row(a.by_gem, "(app)")->count, 4u);
  EXPECT_EQ(row(a.by_gem, "rack")->memsize, 100u);
  EXPECT_EQ(row(a.by_gem, "json-2.6.1")->memsize, 60u);
  EXPECT_EQ(row(a.by_generation, "6")->count, 5u);
  EXPECT_EQ(row(a.by_generation, "5")->count, 1u);
  EXPECT_EQ(row(a.by_generation, "(none)")->count, 4u);
  EXPECT_EQ(row(a.by_type, "OBJECT")->count, 3u);

  // Sorted by memsize: the three 1000-byte classes first (by name), then Hash instances...
  EXPECT_EQ(a.by_type[0].name, "CLASS");
  ASSERT_EQ(a.biggest.size(), 2u);
  EXPECT_EQ(heap.address[a.biggest[0]], 0x10u);  // ties broken by address
  EXPECT_EQ(heap.address[a.biggest[1]], 0x20u);
  ASSERT_EQ(a.top_retained.size(), 2u);
  EXPECT_EQ(heap.address[a.top_retained[0]], 0x100u);
}

// Garbage not swept yet is in no list of biggest objects (no path leads to it), unless the
// dump has no ROOT lines: then nothing tells garbage from live objects, and all count.
TEST(Analysis, BiggestObjectsAreAliveWhenTheRootsTellIt) {
  const std::string garbage = object_line(0x700, "STRING", 0x30, {}, 5000, site("/app/job.rb", 4, 6));
  Heap heap = load_text(sample_dump() + garbage);
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  Analysis a = analyze_heap(heap, tree, 20);
  ASSERT_EQ(a.biggest.size(), 9u);  // the 11 objects but the two garbage ones
  EXPECT_EQ(heap.address[a.biggest[0]], 0x10u);
  for (ObjectId id : a.biggest) {
    EXPECT_NE(heap.address[id], 0x700u);
    EXPECT_NE(heap.address[id], 0x600u);
  }
  EXPECT_EQ(heap.address[a.biggest[3]], 0x100u);  // the live Hash, 200 bytes, after the classes

  Heap rootless = load_text(object_line(0x10, "STRING", 0, {}, 40) + garbage);
  Graph rootless_graph = Graph::build(rootless);
  DominatorTree rootless_tree = DominatorTree::compute(rootless_graph, rootless);
  Analysis b = analyze_heap(rootless, rootless_tree, 20);
  ASSERT_EQ(b.biggest.size(), 2u);
  EXPECT_EQ(rootless.address[b.biggest[0]], 0x700u);
}

TEST(Analysis, GemOfFile) {
  EXPECT_EQ(gem_of_file("/var/lib/gems/3.1.0/gems/rack-2.2.4/lib/rack/utils.rb"), "rack-2.2.4");
  EXPECT_EQ(gem_of_file("/usr/share/rubygems-integration/all/gems/rails-6.1.7/lib/rails.rb"), "rails-6.1.7");
  EXPECT_EQ(gem_of_file("/usr/lib/ruby/vendor_ruby/active_support/core_ext.rb"), "active_support");
  EXPECT_EQ(gem_of_file("/usr/lib/ruby/vendor_ruby/rack.rb"), "rack");
  EXPECT_EQ(gem_of_file("/usr/lib/ruby/3.1.0/set.rb"), "ruby");
  EXPECT_EQ(gem_of_file("/home/u/.rubies/ruby-3.3.0/lib/ruby/3.3.0/json.rb"), "ruby");
  EXPECT_EQ(gem_of_file("/srv/app/models/user.rb"), "(app)");
  EXPECT_EQ(gem_of_file("/srv/app/gems/lib/a.rb"), "(app)");  // not a gem named "lib"
  EXPECT_EQ(gem_of_file("/home/u/.bundle/ruby/3.3.0/bundler/gems/rails-8f3e2c1a9b7d/lib/rails.rb"),
            "rails-8f3e2c1a9b7d");
  EXPECT_EQ(gem_of_file("<internal:gc>"), "(app)");
  EXPECT_EQ(gem_of_file(""), std::string(kNoSite));
}

TEST(Analysis, GenerationsOldestFirstAndMachineContextObjectsListed) {
  Heap heap = load_text(sample_dump());
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  Analysis a = analyze_heap(heap, tree, 5);
  std::vector<std::string> generations;
  for (const GroupRow& r : a.by_generation) generations.push_back(r.name);
  EXPECT_EQ(generations, (std::vector<std::string>{"(none)", "5", "6"}));
  ASSERT_EQ(a.machine_context_only_objects.size(), 1u);
  EXPECT_EQ(heap.address[a.machine_context_only_objects[0]], 0x500u);
}

TEST(Analysis, TopRetainedListsEachDominatorSubtreeOnce) {
  // vm -> a 30-node chain (each node dominates the rest) and, apart, one big string.
  std::string text = root_line("vm", {0x1000, 0x9000});
  for (uint64_t i = 0; i < 30; ++i) {
    std::vector<uint64_t> next;
    if (i + 1 < 30) next.push_back(0x1000 + 0x28 * (i + 1));
    text += object_line(0x1000 + 0x28 * i, "OBJECT", 0, next, 40);
  }
  text += object_line(0x9000, "STRING", 0, {}, 500);
  Heap heap = load_text(text);
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  Analysis a = analyze_heap(heap, tree, 5);
  std::vector<uint64_t> listed;
  for (ObjectId id : a.top_retained) listed.push_back(heap.address[id]);
  EXPECT_EQ(listed, (std::vector<uint64_t>{0x1000, 0x9000}));  // not 0x1028, 0x1050, ...
  EXPECT_EQ(tree.retained[a.top_retained[0]], 1200u);
}

// A group's retained size counts each node none of whose dominators is in the group: checked
// against idom chains on random graphs of three types, whose dominator trees the rollup's two
// threads cut at every depth and shape.
TEST(Analysis, GroupRetainedSizesMatchDominatorChainsOnRandomGraphs) {
  std::mt19937 random(7);
  const std::array<std::string, 3> types = {"OBJECT", "ARRAY", "HASH"};
  for (int trial = 0; trial < 80; ++trial) {
    const int nodes = 2 + trial % 50;
    std::vector<std::vector<uint64_t>> refs(static_cast<size_t>(nodes));
    // A spine (deep trees, cut inside a group's run) and random edges.
    for (int i = 0; i + 1 < nodes; ++i) {
      if (random() % 4 != 0) refs[static_cast<size_t>(i)].push_back(0x1000 + 40 * static_cast<uint64_t>(i + 1));
    }
    for (int e = 0; e < nodes * (trial % 3); ++e) {
      refs[random() % nodes].push_back(0x1000 + 40 * (random() % nodes));
    }
    std::string text = root_line("vm", {0x1000, 0x1000 + 40 * (random() % nodes)});
    for (int i = 0; i < nodes; ++i) {
      text += object_line(0x1000 + 40 * static_cast<uint64_t>(i), types[random() % (trial % 2 == 0 ? 1 : 3)], 0,
                          refs[static_cast<size_t>(i)], 1 + random() % 100);
    }
    Heap heap = load_text(text);
    Graph graph = Graph::build(heap);
    DominatorTree tree = DominatorTree::compute(graph, heap);
    Analysis a = analyze_heap(heap, tree, 0);
    std::map<std::string, uint64_t> expected;
    for (ObjectId v = 0; v < heap.size(); ++v) {
      if (!tree.reachable(v)) continue;
      bool nested = false;
      for (ObjectId up = tree.idom[v]; up != tree.super_root; up = tree.idom[up]) nested |= heap.type[up] == heap.type[v];
      if (!nested) expected[std::string(object_type_name(heap.type[v]))] += tree.retained[v];
    }
    std::map<std::string, uint64_t> got;
    for (const GroupRow& r : a.by_type) {
      if (r.retained > 0) got[r.name] = r.retained;
    }
    EXPECT_EQ(got, expected) << "trial " << trial;
  }
}

TEST(Analysis, DuplicateStringsAndMostReferenced) {
  auto str = [](uint64_t address, const std::string& value, uint64_t memsize) {
    return object_line(address, "STRING", 0, {}, memsize, R"(, "bytesize":3, "value":")" + value + R"(")");
  };
  std::string text = root_line("vm", {0x100}) +
                     object_line(0x100, "ARRAY", 0, {0x200, 0x210, 0x220, 0x230, 0x240, 0x240}, 80) +
                     str(0x200, "abc", 40) + str(0x210, "abc", 40) + str(0x220, "abc", 72) +
                     str(0x230, R"(a\"b)", 40) + str(0x240, R"(a\"b)", 40) + str(0x250, "solo", 40) +
                     object_line(0x300, "ARRAY", 0, {0x240}, 40);
  Heap heap = load_text(text);
  ASSERT_EQ(heap.string_values.size(), 6u);
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  Analysis a = analyze_heap(heap, tree, AnalysisOptions{.top = 5, .samples = 2});
  ASSERT_EQ(a.duplicate_strings.size(), 2u);
  EXPECT_EQ(a.duplicate_strings[0].value, "abc");
  EXPECT_EQ(a.duplicate_strings[0].count, 3u);
  EXPECT_EQ(a.duplicate_strings[0].memsize, 152u);
  EXPECT_EQ(a.duplicate_strings[0].wasted, 80u);  // all but the largest copy
  EXPECT_EQ(a.duplicate_strings[0].samples, (std::vector<ObjectId>{heap.find(0x220), heap.find(0x200)}));
  EXPECT_EQ(a.duplicate_strings[1].value, R"(a\"b)");  // as the dump writes it
  EXPECT_EQ(a.duplicate_strings[1].wasted, 40u);
  ASSERT_GE(a.most_referenced.size(), 1u);
  // Three slots hold 0x240, in two objects: two referrers, as `retainers` lists them.
  EXPECT_EQ(heap.address[a.most_referenced[0].first], 0x240u);
  EXPECT_EQ(a.most_referenced[0].second, 2u);
}

// Values longer than the head kept per String tie when their heads, counts and sizes do: such
// rows come in the order of their first copy in the dump, the same on every run.
TEST(Analysis, DuplicateStringsThatTieComeInDumpOrder) {
  std::string text;
  std::vector<uint64_t> copies;
  for (int i = 0; i < 20; ++i) {
    const std::string value = fmt::format("a head all the values share, then {}", i);
    for (uint64_t base : {0x1000, 0x2000}) {
      const uint64_t address = base + 0x10 * static_cast<uint64_t>(i);
      text += object_line(address, "STRING", 0, {}, 40, R"(, "value":")" + value + R"(")");
      copies.push_back(address);
    }
  }
  Heap heap = load_text(root_line("vm", copies) + text);
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  Analysis a = analyze_heap(heap, tree, AnalysisOptions{.top = 0, .samples = 2});
  ASSERT_EQ(a.duplicate_strings.size(), 20u);
  for (size_t row = 0; row < 20; ++row) {
    SCOPED_TRACE(row);
    EXPECT_TRUE(a.duplicate_strings[row].cut);
    EXPECT_EQ(a.duplicate_strings[row].wasted, 40u);
    ASSERT_EQ(a.duplicate_strings[row].samples.size(), 2u);
    EXPECT_EQ(heap.address[a.duplicate_strings[row].samples[0]], 0x1000 + 0x10 * row);
    EXPECT_EQ(heap.address[a.duplicate_strings[row].samples[1]], 0x2000 + 0x10 * row);
  }
}

// A DATA object's label names its struct, so a DATA object of class Object (Ruby's allocation
// tracer) is not in the row of plain Objects, and DATA objects without a class get one row per
// struct: each row holds exactly the objects `--class ROW` selects, whichever came first.
TEST(Analysis, DataObjectsAreGroupedByClassAndStruct) {
  const std::string dump = object_line(0x10, "CLASS", 0, {}, 1000, R"(, "name":"Object")") +
                           object_line(0x100, "DATA", 0x10, {}, 29000, R"(, "struct":"tracer")") +
                           object_line(0x110, "OBJECT", 0x10, {}, 40) +
                           object_line(0x120, "OBJECT", 0x10, {}, 40) +
                           object_line(0x200, "DATA", 0, {}, 512, R"(, "struct":"compat_table")") +
                           object_line(0x210, "DATA", 0, {}, 100, R"(, "struct":"autoload")") +
                           object_line(0x220, "DATA", 0, {}, 100, R"(, "struct":"autoload")") +
                           object_line(0x230, "DATA", 0, {}, 50);
  Heap heap = load_text(dump);
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  Analysis a = analyze_heap(heap, tree, 20);
  for (auto [name, count, memsize] : {std::tuple{"Object (tracer)", 1u, 29000u}, {"Object", 2u, 80u},
                                      {"(DATA:compat_table)", 1u, 512u}, {"(DATA:autoload)", 2u, 200u},
                                      {"(DATA)", 1u, 50u}}) {
    SCOPED_TRACE(name);
    const GroupRow* group = row(a.by_class, name);
    ASSERT_NE(group, nullptr);
    EXPECT_EQ(group->count, count);
    EXPECT_EQ(group->memsize, memsize);
    auto selection = ObjectSelection::make(heap, {.class_label = name});
    ASSERT_TRUE(selection.ok());
    EXPECT_EQ(analyze_heap(heap, tree, AnalysisOptions{.selection = &*selection}).count, count);
  }
}

// The analyzer's threads ask one selection at once (the groupings and the lists); `analyze
// --class X` of a dump with a few hundred classes crashed 2 runs in 1,000 when asking filled a
// shared cache.
TEST(Analysis, ASelectionAnswersManyThreadsAtOnce) {
  constexpr int kClasses = 3000;
  std::string dump;
  for (int c = 0; c < kClasses; ++c) {
    dump += object_line(0x100000 + c * 0x10, "CLASS", 0, {}, 1000, fmt::format(R"(, "name":"C{}")", c));
    dump += object_line(0x800000 + c * 0x10, "OBJECT", 0x100000 + c * 0x10, {}, 40);
  }
  Heap heap = load_text(dump);
  for (int round = 0; round < 20; ++round) {
    auto selection = ObjectSelection::make(heap, {.class_label = fmt::format("C{}", round * 97)});
    ASSERT_TRUE(selection.ok());
    auto count = [&] {
      int selected = 0;
      for (ObjectId id = 0; id < heap.size(); ++id) selected += (*selection)(id);
      return selected;
    };
    std::vector<int> counts(4);
    std::vector<std::thread> threads;
    for (int& c : counts) threads.emplace_back([&] { c = count(); });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(counts, std::vector<int>(4, 1));
  }
}

TEST(Analysis, FiltersSelectTheObjectsTheReportCovers) {
  Heap heap = load_text(sample_dump());
  Graph graph = Graph::build(heap);
  DominatorTree tree = DominatorTree::compute(graph, heap);
  auto selection = ObjectSelection::make(heap, {.site = "entry.rb:7"});
  ASSERT_TRUE(selection.ok());
  Analysis a = analyze_heap(heap, tree, AnalysisOptions{.top = 5, .samples = 1, .selection = &*selection});
  EXPECT_EQ(a.count, 3u);
  EXPECT_EQ(a.memsize, 120u);
  ASSERT_EQ(a.by_class.size(), 1u);
  EXPECT_EQ(a.by_class[0].name, "Entry");
  EXPECT_EQ(a.by_class[0].retained, 240u);  // each Entry with the String it holds
  ASSERT_EQ(a.by_class[0].samples.size(), 1u);
  EXPECT_EQ(heap.address[a.by_class[0].samples[0]], 0x200u);  // retains 140, the most
  ASSERT_EQ(a.biggest.size(), 2u);  // the third Entry, at 0x600, is garbage
  EXPECT_EQ(heap.address[a.biggest[0]], 0x200u);
  EXPECT_EQ(heap.address[a.biggest[1]], 0x300u);
  auto strings = ObjectSelection::make(heap, {.type = "string"});
  ASSERT_TRUE(strings.ok());
  EXPECT_EQ(analyze_heap(heap, tree, AnalysisOptions{.selection = &*strings}).count, 3u);
}

}  // namespace
}  // namespace memprof::heap
