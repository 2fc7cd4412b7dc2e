#include "profile/call_tree.h"

#include <algorithm>
#include <map>
#include <utility>

namespace memprof::profile {
namespace {

std::string location_text(const Frame& frame) {
  if (frame.line == 0) return frame.file;
  return frame.file + ":" + std::to_string(frame.line);
}

// TreeFrame index of each StackProfile frame.
std::vector<uint32_t> merge_frames(const StackProfile& profile, std::vector<TreeFrame>& merged) {
  std::map<std::pair<std::string, std::string>, uint32_t> index;  // label, library
  std::vector<uint32_t> tree_frame_of;
  tree_frame_of.reserve(profile.frames.size());
  for (const Frame& frame : profile.frames) {
    std::string label = frame_label(frame);
    auto [it, added] =
        index.try_emplace({label, frame.library}, static_cast<uint32_t>(merged.size()));
    if (added) {
      merged.push_back(TreeFrame{.label = std::move(label),
                                 .library = frame.library,
                                 .symbolized = !frame.function.empty()});
    }
    if (!frame.file.empty()) merged[it->second].locations.push_back(location_text(frame));
    tree_frame_of.push_back(it->second);
  }
  for (TreeFrame& frame : merged) {
    std::sort(frame.locations.begin(), frame.locations.end());
    frame.locations.erase(std::unique(frame.locations.begin(), frame.locations.end()),
                          frame.locations.end());
  }
  return tree_frame_of;
}

}  // namespace

Result<CallTree> build_call_tree(const StackProfile& profile) {
  MEMPROF_TRY_STATUS(check_stack_profile(profile));
  CallTree tree;
  const std::vector<uint32_t> tree_frame_of = merge_frames(profile, tree.frames);
  tree.nodes.emplace_back();
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> child_of;  // (parent, tree frame) -> node
  for (const Sample& sample : profile.samples) {
    Totals values;
    for (SampleValue value : kSampleValues) {
      values[static_cast<size_t>(value)] = sample.value(value);
    }
    auto add = [&values](CallTreeNode& node) {
      for (size_t i = 0; i < values.size(); ++i) node.totals[i] += values[i];
    };
    add(tree.nodes[0]);
    uint32_t node = 0;
    for (auto frame = sample.frames.rbegin(); frame != sample.frames.rend(); ++frame) {
      const uint32_t tree_frame = tree_frame_of[*frame];
      auto [it, added] =
          child_of.try_emplace({node, tree_frame}, static_cast<uint32_t>(tree.nodes.size()));
      if (added) tree.nodes.push_back(CallTreeNode{.parent = node, .frame = tree_frame});
      node = it->second;
      add(tree.nodes[node]);
    }
  }
  return tree;
}

}  // namespace memprof::profile
