// diff_heaps: new objects, survivors, address reuse, and GC.compact handled by generations.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "heap/analysis.h"
#include "heap/diff.h"
#include "heap/graph.h"
#include "heap/reachability.h"
#include "test_support.h"

namespace memprof::heap {
namespace {

using testing::load_text;
using testing::object_line;

std::string traced(const std::string& file, int line, int generation) {
  return fmt::format(R"(, "file":"{}", "line":{}, "generation":{})", file, line, generation);
}

const std::string kClasses = object_line(0x10, "CLASS", 0, {}, 500, R"(, "name":"Leaky")") +
                             object_line(0x18, "CLASS", 0, {}, 500, R"(, "name":"String")");

TEST(Diff, ThreeDumpsWithoutGenerations) {
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40));
  // B: 0x100 unchanged; 0x200/0x300 new; 0x400 new String.
  Heap b = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40) +
                     object_line(0x200, "OBJECT", 0x10, {}, 40) + object_line(0x300, "OBJECT", 0x10, {}, 40) +
                     object_line(0x400, "STRING", 0x18, {}, 64));
  // C: 0x200 survives; 0x300's slot now holds a String (freed and reused); 0x400 survives.
  Heap c = load_text(kClasses + object_line(0x200, "OBJECT", 0x10, {}, 40) +
                     object_line(0x300, "STRING", 0x18, {}, 40) + object_line(0x400, "STRING", 0x18, {}, 64));
  DiffResult two = diff_heaps(a, b, nullptr);
  EXPECT_EQ(two.new_count, 3u);
  EXPECT_EQ(two.new_memsize, 144u);
  EXPECT_EQ(two.kept_count, 3u);
  EXPECT_FALSE(two.generations);

  DiffResult three = diff_heaps(a, b, &c);
  EXPECT_EQ(three.new_count, 3u);
  EXPECT_EQ(three.kept_count, 2u);
  EXPECT_EQ(three.kept_memsize, 104u);
  ASSERT_EQ(three.rows.size(), 2u);
  EXPECT_EQ(three.rows[0].class_name, "String");
  EXPECT_EQ(three.rows[0].location, std::string(kNoSite));
  EXPECT_EQ(three.rows[0].memsize, 64u);
  EXPECT_EQ(three.rows[1].class_name, "Leaky");
  EXPECT_EQ(three.rows[1].count, 1u);
}

std::vector<uint8_t> reachable(const Heap& heap) { return reachable_from_roots(Graph::build(heap), heap); }

TEST(Diff, GarbageIsNotAlive) {
  const std::string roots = testing::root_line("vm", {0x10, 0x18, 0x100, 0x200});
  Heap a = load_text(roots + kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40));
  // B: 0x200 new and referenced by a root; 0x300 new and referenced by nothing (garbage the GC
  // had not swept); 0x400 a String only that garbage references.
  Heap b = load_text(roots + kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40) +
                     object_line(0x200, "OBJECT", 0x10, {}, 40) +
                     object_line(0x300, "OBJECT", 0x10, {0x400}, 48) +
                     object_line(0x400, "STRING", 0x18, {}, 64));
  // C: 0x200 still there but no root reaches it any more.
  Heap c = load_text(testing::root_line("vm", {0x10, 0x18}) + kClasses +
                     object_line(0x200, "OBJECT", 0x10, {}, 40));
  const std::vector<uint8_t> live_b = reachable(b), live_c = reachable(c);

  DiffResult all = diff_heaps(a, b, nullptr);  // reachability not given: all counted alive
  EXPECT_EQ(all.new_count, 3u);
  EXPECT_FALSE(all.garbage_known);

  DiffResult two = diff_heaps(a, b, nullptr, {.reachable_b = &live_b});
  EXPECT_TRUE(two.garbage_known);
  EXPECT_EQ(two.new_count, 1u);
  EXPECT_EQ(two.new_memsize, 40u);
  EXPECT_EQ(two.garbage_count, 2u);
  EXPECT_EQ(two.garbage_memsize, 112u);
  ASSERT_EQ(two.rows.size(), 1u);
  EXPECT_EQ(two.rows[0].class_name, "Leaky");

  EXPECT_EQ(diff_heaps(a, b, &c, {.reachable_b = &live_b}).kept_count, 1u);
  DiffResult three = diff_heaps(a, b, &c, {.reachable_b = &live_b, .reachable_c = &live_c});
  EXPECT_EQ(three.new_count, 1u);
  EXPECT_EQ(three.kept_count, 0u);
  EXPECT_TRUE(three.rows.empty());
}

TEST(Diff, SlotReusedByAnotherClassIsNew) {
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)));
  Heap b = load_text(kClasses + object_line(0x100, "STRING", 0x18, {}, 40, traced("b.rb", 2, 9)));
  DiffResult d = diff_heaps(a, b, nullptr);
  EXPECT_EQ(d.address_mismatches, 1u);
  EXPECT_EQ(d.new_count, 1u);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].location, "b.rb:2");
}

TEST(Diff, GenerationsSeeThroughCompaction) {
  // A: two old objects (generation 3) and the newest (generation 8). GC.compact then moves
  // everything: in B the old objects live at new addresses, one of them at an address A used
  // for something else. One object is really new (generation 9).
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x200, "STRING", 0x18, {}, 40, traced("a.rb", 2, 3)) +
                     object_line(0x300, "STRING", 0x18, {}, 40, traced("a.rb", 5, 8)));
  Heap b = load_text(kClasses + object_line(0x900, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x100, "STRING", 0x18, {}, 40, traced("a.rb", 2, 3)) +
                     object_line(0x300, "STRING", 0x18, {}, 40, traced("a.rb", 5, 8)) +
                     object_line(0x980, "OBJECT", 0x10, {}, 40, traced("leak.rb", 7, 9)));
  // C: compaction again: the new object moved to 0x120.
  Heap c = load_text(kClasses + object_line(0x120, "OBJECT", 0x10, {}, 40, traced("leak.rb", 7, 9)));
  DiffResult d = diff_heaps(a, b, &c);
  EXPECT_TRUE(d.generations);
  EXPECT_EQ(d.max_generation_a, 8u);
  EXPECT_EQ(d.max_generation_b, 9u);
  EXPECT_EQ(d.old_by_generation, 3u);  // the two moved ones and the one at its address
  EXPECT_EQ(d.new_by_generation, 1u);
  EXPECT_EQ(d.address_mismatches, 1u);
  EXPECT_EQ(d.new_count, 1u);
  EXPECT_EQ(d.kept_count, 1u);
  EXPECT_EQ(d.kept_by_generation, 1u);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].location, "leak.rb:7");
  EXPECT_EQ(d.rows[0].class_name, "Leaky");
}

// With generations, A's highest generation is the boundary. Below it an object was allocated
// before A, wherever it lives now; at it, an object of a signature A has that many of is A's
// (wherever it moved), and one A had none of was allocated after A was dumped (but before the
// next GC) and is new.
TEST(Diff, GenerationBoundaryIsTheHighestGenerationOfA) {
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 7)) +
                     object_line(0x200, "OBJECT", 0x10, {}, 40, traced("a.rb", 2, 8)));
  Heap b = load_text(kClasses +
                     object_line(0x500, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 7)) +  // moved
                     object_line(0x200, "OBJECT", 0x10, {}, 40, traced("a.rb", 2, 8)) +  // in place
                     object_line(0x600, "STRING", 0x18, {}, 24, traced("b.rb", 4, 8)));  // new
  DiffResult d = diff_heaps(a, b, nullptr);
  EXPECT_TRUE(d.generations);
  EXPECT_EQ(d.old_by_generation, 2u);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(fmt::format("{} {} x{} {}B", d.rows[0].location, d.rows[0].class_name, d.rows[0].count,
                        d.rows[0].memsize),
            "b.rb:4 String x1 24B");
}

// Objects Memprof.dump_all made to write B are marked "memprof_own" (a File, a path): new in B,
// but memprof's, so left out and counted apart; the app's new object stays. An own object of A
// that B holds unmarked at its address (carried no further) is the same object: old, not new.
TEST(Diff, LeavesOutTheObjectsTheDumpsWriterMade) {
  const std::string own = R"(, "memprof_own":true)";
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x300, "DATA", 0x10, {}, 72, traced("lib.rb", 9, 3) + own));
  Heap b = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x300, "DATA", 0x10, {}, 72, traced("lib.rb", 9, 3)) +
                     object_line(0x400, "OBJECT", 0x10, {}, 8432, own) +
                     object_line(0x500, "STRING", 0x18, {}, 104, own) +
                     object_line(0x600, "STRING", 0x18, {}, 24, traced("b.rb", 4, 5)));
  EXPECT_EQ(b.flags[b.find(0x400)] & kFlagMemprofOwn, kFlagMemprofOwn);
  DiffResult d = diff_heaps(a, b, nullptr);
  EXPECT_EQ(d.new_count, 1u);
  EXPECT_EQ(d.own_count, 2u);
  EXPECT_EQ(d.own_memsize, 8536u);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].location, "b.rb:4");
}

TEST(Diff, GenerationDecidesEvenInARecycledSlotFromTheSameLine) {
  // A's object at 0x100 died; a new one from the same line took its slot after A.
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x200, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)));
  Heap b = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 5)) +
                     object_line(0x200, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)));
  DiffResult d = diff_heaps(a, b, nullptr);
  EXPECT_EQ(d.new_count, 1u);
  EXPECT_EQ(d.new_by_generation, 1u);
  EXPECT_EQ(d.old_by_generation, 1u);
  EXPECT_EQ(d.address_mismatches, 1u);
}

// A line that leaks an object and drops a temporary of the same class (`"line #{i}-#{k}"`:
// the Integers' to_s, then the result) leaves garbage in A of A's newest generation; what it
// leaks after A, before the next collection, has that generation too. A's garbage is alive in
// no later dump: it is not an object of B moved elsewhere (before, 18 of 1,380 leaked Strings
// of a Ruby 3.4 run were taken for moved temporaries and judged old), nor the one in its slot.
TEST(Diff, AtTheNewestGenerationASlotThatHeldGarbageInAHoldsANewObject) {
  const std::string roots = testing::root_line("vm", {0x10, 0x18, 0x100});
  // A: 0x100 alive; 0x200 and 0x300 dead temporaries of the same line and generation.
  Heap a = load_text(roots + kClasses + object_line(0x100, "STRING", 0x18, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x200, "STRING", 0x18, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x300, "STRING", 0x18, {}, 40, traced("a.rb", 1, 4)));
  // B: 0x100 is A's; 0x200 is a leaked one, allocated after A in the same generation; 0x400
  // is another (A's dead 0x300 cannot have moved there).
  Heap b = load_text(testing::root_line("vm", {0x10, 0x18, 0x100, 0x200, 0x400}) + kClasses +
                     object_line(0x100, "STRING", 0x18, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x200, "STRING", 0x18, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x400, "STRING", 0x18, {}, 40, traced("a.rb", 1, 4)));
  const std::vector<uint8_t> live_a = reachable(a), live_b = reachable(b);
  DiffResult d = diff_heaps(a, b, nullptr, {.reachable_a = &live_a, .reachable_b = &live_b});
  EXPECT_EQ(d.old_by_generation, 1u);
  EXPECT_EQ(d.new_by_generation, 2u);
  EXPECT_EQ(d.new_count, 2u);
  EXPECT_EQ(d.address_mismatches, 1u);  // 0x200: A's garbage there, a new object in B
  // Without A's reachability, the slot's object is taken for A's (the same line and
  // generation), and 0x400 for A's 0x300, moved.
  DiffResult blind = diff_heaps(a, b, nullptr, {.reachable_b = &live_b});
  EXPECT_EQ(blind.new_count, 0u);
}

TEST(Diff, ObjectsOfTheNewestGenerationOfAAreMatchedWhereverTheyMoved) {
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x200, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)));
  // One moved to 0x300; two more from the same line and generation were allocated after A.
  Heap b = load_text(kClasses + object_line(0x300, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x200, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x400, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)) +
                     object_line(0x500, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 4)));
  DiffResult d = diff_heaps(a, b, nullptr);
  EXPECT_EQ(d.old_by_generation, 2u);
  EXPECT_EQ(d.new_by_generation, 2u);
}

TEST(Diff, ClassCountsDecideObjectsThatLostTheirGeneration) {
  // GC.compact on Ruby 3.1 drops the allocation info of the objects it moves. A has one Leaky
  // and one String without generation (older than tracing); B has four Leaky and two Strings
  // without generation, none at an address A used.
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x200, "STRING", 0x18, {}, 40));
  Heap b = load_text(kClasses + object_line(0x900, "OBJECT", 0x10, {}, 40) +
                     object_line(0x940, "OBJECT", 0x10, {}, 40) + object_line(0x980, "OBJECT", 0x10, {}, 40) +
                     object_line(0x9c0, "OBJECT", 0x10, {}, 40, traced("leak.rb", 2, 6)) +
                     object_line(0xa00, "STRING", 0x18, {}, 40) + object_line(0xa40, "STRING", 0x18, {}, 40));
  DiffResult d = diff_heaps(a, b, nullptr);
  EXPECT_EQ(d.new_by_generation, 1u);
  // Three Leaky without generation, A had one: at least two are new; one may be A's. The two
  // Strings: one may be A's, so one is new.
  EXPECT_EQ(d.new_by_class_count, 3u);
  EXPECT_EQ(d.undecided_count, 2u);
  EXPECT_EQ(d.undecided_memsize, 80u);
  EXPECT_EQ(d.new_count, 4u);
  ASSERT_EQ(d.undecided_rows.size(), 2u);
  EXPECT_EQ(d.undecided_rows[0].location, "(no allocation info)");
}

TEST(Diff, NewObjectsMissingFromCWithObjectsOfTheirClassThatLostTheirGenerationAreUndecided) {
  // B's three new Strings are gone from their addresses in C; C holds three Strings without
  // generation (GC.compact on Ruby 3.1). They may be B's, moved, or others allocated after B
  // and moved while B's were freed: before, all three were counted as leaks.
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)));
  Heap b = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x900, "STRING", 0x18, {}, 40, traced("churn.rb", 4, 6)) +
                     object_line(0x940, "STRING", 0x18, {}, 40, traced("churn.rb", 4, 6)) +
                     object_line(0x980, "STRING", 0x18, {}, 40, traced("churn.rb", 4, 6)) +
                     object_line(0x9c0, "OBJECT", 0x10, {}, 40, traced("leak.rb", 7, 6)));
  Heap c = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)) +
                     object_line(0x9c0, "OBJECT", 0x10, {}, 40, traced("leak.rb", 7, 6)) +
                     object_line(0x500, "STRING", 0x18, {}, 40) + object_line(0x540, "STRING", 0x18, {}, 40) +
                     object_line(0x580, "STRING", 0x18, {}, 40));
  DiffResult d = diff_heaps(a, b, &c);
  EXPECT_EQ(d.new_count, 4u);
  EXPECT_EQ(d.kept_count, 1u);  // the Leaky, at its address
  EXPECT_EQ(d.undecided_in_c_count, 3u);
  EXPECT_EQ(d.undecided_in_c_memsize, 120u);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].location, "leak.rb:7");
  ASSERT_EQ(d.undecided_in_c_rows.size(), 1u);
  EXPECT_EQ(d.undecided_in_c_rows[0].location, "churn.rb:4");
  EXPECT_EQ(d.undecided_in_c_rows[0].count, 3u);
}

TEST(Diff, RefusesDumpsInTheWrongOrderOrOfAnotherProcess) {
  Heap a = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 3)));
  Heap b = load_text(kClasses + object_line(0x100, "OBJECT", 0x10, {}, 40, traced("a.rb", 1, 9)));
  EXPECT_TRUE(check_dump_order(a, "a", b, "b").ok());
  auto backwards = check_dump_order(b, "b", a, "a");
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.message(),
            "a cannot have been taken after b: its newest allocation generation (3) is older than "
            "that of b (9); give the dumps in the order they were taken");
  Heap elsewhere = load_text(object_line(0x7f0000100000, "OBJECT", 0, {}, 40));
  auto other = check_dump_order(a, "a", elsewhere, "c");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.message(),
            "a and c share no heap page: they come from different processes (or one restarted in between)");
}

TEST(Diff, FilterAndSamples) {
  Heap a = load_text(kClasses);
  Heap b = load_text(kClasses + object_line(0x200, "OBJECT", 0x10, {}, 40) +
                     object_line(0x300, "OBJECT", 0x10, {}, 48) + object_line(0x400, "STRING", 0x18, {}, 64));
  auto selection = ObjectSelection::make(b, {.class_label = "Leaky"});
  ASSERT_TRUE(selection.ok());
  DiffResult d = diff_heaps(a, b, nullptr, {.selection = &*selection, .samples = 1});
  EXPECT_EQ(d.new_count, 2u);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].samples, (std::vector<ObjectId>{b.find(0x300)}));  // the largest first
  EXPECT_FALSE(ObjectSelection::make(b, {.type = "strin"}).ok());
}

}  // namespace
}  // namespace memprof::heap
