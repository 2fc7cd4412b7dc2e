// A weighted stack profile: what `memprof native` measured for each unique allocation stack,
// frames already symbolized, in the one shape every writer of this area takes (pprof, collapsed
// stacks, the HTML flame graph). Plain data: the caller fills it, the writers only read it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"

namespace memprof::profile {

// The four values of a stack, named and ordered as Go's heap profiles (runtime/pprof) name them,
// so that `go tool pprof -sample_index=NAME` and memprof's own choice of value say the same.
enum class SampleValue { kAllocObjects, kAllocSpace, kInuseObjects, kInuseSpace };
inline constexpr std::array<SampleValue, 4> kSampleValues = {
    SampleValue::kAllocObjects, SampleValue::kAllocSpace, SampleValue::kInuseObjects,
    SampleValue::kInuseSpace};

// "alloc_objects", "alloc_space", "inuse_objects", "inuse_space".
std::string_view sample_value_name(SampleValue value);
// The value of that name, or nothing for any other text.
std::optional<SampleValue> parse_sample_value(std::string_view name);
// True for the two values in bytes (alloc_space, inuse_space), false for the object counts.
bool is_bytes(SampleValue value);

struct Frame {
  std::string function;  // symbol name as it should be shown; empty: not symbolized
  std::string system_name;  // the symbol as linked (a C++ name mangled), when it is not `function`
  std::string library;   // path of the object the address is in; empty: unknown
  std::string file;      // source file; empty: unknown
  uint32_t line = 0;     // 0: unknown
  uint64_t address = 0;  // the frame's (return) address; 0: unknown
};

struct Sample {
  std::vector<uint32_t> frames;  // indexes into StackProfile::frames, leaf first
  int64_t alloc_objects = 0;
  int64_t alloc_space = 0;  // bytes
  int64_t inuse_objects = 0;
  int64_t inuse_space = 0;  // bytes

  int64_t value(SampleValue which) const;
};

// Where a library was loaded, when the caller knows it (pprof's Mapping). Libraries that frames
// name but this list does not are written without an address range.
struct Library {
  std::string path;  // as Frame::library names it
  uint64_t start = 0;
  uint64_t limit = 0;        // one past the end
  uint64_t file_offset = 0;  // of `start` in the file
  std::string build_id;      // hex; empty: unknown
};

struct StackProfile {
  std::vector<Frame> frames;  // shared by the samples; a frame may appear in several stacks
  std::vector<Sample> samples;
  std::vector<Library> libraries;  // optional, the main executable first
  int64_t time_nanos = 0;          // when the profile was taken (Unix epoch); 0: not said
  int64_t duration_nanos = 0;      // how long it covers; 0: not said
  std::string title;               // one line for people: the command, the process
};

// The writers' one precondition, checked by each of them: every frame index of every sample is
// in range, and no value is negative (these are counts of allocations and bytes, and a flame
// graph cannot draw a negative width). Fails with "sample N: ..." naming the first offence.
Status check_stack_profile(const StackProfile& profile);

// The text a frame is shown as where one label must stand for it (collapsed stacks, the boxes of
// the flame graph): its function; for a frame that was not symbolized, its address and library
// ("0x7f3a10002000 [libfoo.so]", the library by its file name), whichever of them is known, or
// "[unknown]".
std::string frame_label(const Frame& frame);

}  // namespace memprof::profile
