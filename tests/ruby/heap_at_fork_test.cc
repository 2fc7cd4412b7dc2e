// Which machine_context roots a dump's child keeps: those a word of the app's part of the
// stack holds. The rest Ruby read from memprof's own frames below it (the attach agent's job,
// Memprof.dump_all's fork), whose unwritten slots hold what the app's deeper calls left there.
#include "ruby/heap_at_fork.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace memprof::ruby {
namespace {

std::vector<std::string> described(const std::vector<Root>& roots) {
  std::vector<std::string> out;
  for (const Root& root : roots) out.push_back(std::string(root.category) + " " + std::to_string(root.object));
  return out;
}

TEST(HeapAtFork, KeepsTheMachineContextRootsTheAppsFramesHoldAndEveryOtherRoot) {
  std::vector<Root> roots = {{"vm", 10},
                             {"machine_context", 20},   // in the app's frames
                             {"machine_context", 30},   // only in memprof's
                             {"machine_context", 20},   // Ruby reports a word each time it finds it
                             {"global_tbl", 30},        // the same object from another root
                             {"machine_context", 40}};  // in the app's frames
  const std::vector<uintptr_t> app_words = {7, 40, 0, 20, 99};
  drop_machine_context_roots_not_in(roots, app_words);
  EXPECT_EQ(described(roots), (std::vector<std::string>{"vm 10", "machine_context 20", "machine_context 20",
                                                         "global_tbl 30", "machine_context 40"}));
}

}  // namespace
}  // namespace memprof::ruby
