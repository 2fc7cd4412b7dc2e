#include "profile/collapsed_stacks.h"

#include <map>

#include "profile/profile_file.h"

namespace memprof::profile {
namespace {

std::string collapsed_frame(const Frame& frame) {
  std::string text = frame_label(frame);
  for (char& c : text) {
    if (c == ';') {
      c = ':';
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      c = '?';
    }
  }
  return text;
}

}  // namespace

Result<std::string> collapsed_stacks(const StackProfile& profile, SampleValue value) {
  MEMPROF_TRY_STATUS(check_stack_profile(profile));
  std::vector<std::string> frame_texts;
  frame_texts.reserve(profile.frames.size());
  for (const Frame& frame : profile.frames) frame_texts.push_back(collapsed_frame(frame));

  std::map<std::string, int64_t> stacks;
  for (const Sample& sample : profile.samples) {
    if (sample.value(value) == 0) continue;
    std::string stack;
    for (auto frame = sample.frames.rbegin(); frame != sample.frames.rend(); ++frame) {
      if (!stack.empty()) stack += ';';
      stack += frame_texts[*frame];
    }
    if (stack.empty()) stack = "[unknown]";
    stacks[stack] += sample.value(value);
  }
  std::string out;
  for (const auto& [stack, total] : stacks) {
    out += stack;
    out += ' ';
    out += std::to_string(total);
    out += '\n';
  }
  return out;
}

Status write_collapsed_stacks(const std::string& path, const StackProfile& profile,
                              SampleValue value) {
  return write_profile_file(path, collapsed_stacks(profile, value));
}

}  // namespace memprof::profile
