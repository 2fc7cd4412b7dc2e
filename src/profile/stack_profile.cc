#include "profile/stack_profile.h"

#include <fmt/format.h>

#include "core/util/path_name.h"

namespace memprof::profile {

std::string_view sample_value_name(SampleValue value) {
  switch (value) {
    case SampleValue::kAllocObjects: return "alloc_objects";
    case SampleValue::kAllocSpace: return "alloc_space";
    case SampleValue::kInuseObjects: return "inuse_objects";
    case SampleValue::kInuseSpace: return "inuse_space";
  }
  return "";
}

std::optional<SampleValue> parse_sample_value(std::string_view name) {
  for (SampleValue value : kSampleValues) {
    if (sample_value_name(value) == name) return value;
  }
  return std::nullopt;
}

bool is_bytes(SampleValue value) {
  return value == SampleValue::kAllocSpace || value == SampleValue::kInuseSpace;
}

int64_t Sample::value(SampleValue which) const {
  switch (which) {
    case SampleValue::kAllocObjects: return alloc_objects;
    case SampleValue::kAllocSpace: return alloc_space;
    case SampleValue::kInuseObjects: return inuse_objects;
    case SampleValue::kInuseSpace: return inuse_space;
  }
  return 0;
}

Status check_stack_profile(const StackProfile& profile) {
  for (size_t i = 0; i < profile.samples.size(); ++i) {
    const Sample& sample = profile.samples[i];
    for (uint32_t frame : sample.frames) {
      if (frame >= profile.frames.size()) {
        return err("sample {}: frame index {} is out of range ({} frames)", i, frame,
                   profile.frames.size());
      }
    }
    for (SampleValue value : kSampleValues) {
      if (sample.value(value) < 0) {
        return err("sample {}: {} is negative ({})", i, sample_value_name(value),
                   sample.value(value));
      }
    }
  }
  return ok_status();
}

std::string frame_label(const Frame& frame) {
  if (!frame.function.empty()) return frame.function;
  // The library's file name: the label has to stay short, and the path is in the details.
  const std::string_view library = file_name_of(frame.library);
  if (frame.address == 0) return library.empty() ? "[unknown]" : fmt::format("[{}]", library);
  if (library.empty()) return fmt::format("{:#x}", frame.address);
  return fmt::format("{:#x} [{}]", frame.address, library);
}

}  // namespace memprof::profile
