// The stacks of a profile merged into one tree from the root, as a flame graph draws them: a
// node per distinct path of frames, carrying the four values summed over the stacks through it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/util/result.h"
#include "profile/stack_profile.h"

namespace memprof::profile {

// Frames as the flame graph tells them apart: by label and library, so that one function's
// frames at several return addresses or lines are one box, and a function of the same name in
// two libraries two boxes.
struct TreeFrame {
  std::string label;                   // frame_label()
  std::string library;                 // full path
  std::vector<std::string> locations;  // the merged frames' "file:line" (or "file"), sorted, unique
  bool symbolized = true;              // the function is known (the label is not an address)
};

using Totals = std::array<int64_t, kSampleValues.size()>;  // indexed by SampleValue

struct CallTreeNode {
  uint32_t parent = 0;  // index into CallTree::nodes; unused for the root
  uint32_t frame = 0;   // index into CallTree::frames; unused for the root
  Totals totals = {};   // over every stack through this node
};

struct CallTree {
  std::vector<TreeFrame> frames;
  // nodes[0] is the root (every stack, no frame); a node comes after its parent, children in
  // the order they were first seen.
  std::vector<CallTreeNode> nodes;
};

// Fails as check_stack_profile() does.
Result<CallTree> build_call_tree(const StackProfile& profile);

}  // namespace memprof::profile
