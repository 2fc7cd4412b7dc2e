#include "profile/pprof_writer.h"

#include <map>
#include <tuple>
#include <vector>

#include "profile/gzip.h"
#include "profile/profile_file.h"
#include "profile/protobuf_writer.h"

namespace memprof::profile {
namespace {

// Field numbers of profile.proto (github.com/google/pprof/proto/profile.proto).
namespace proto {
constexpr uint32_t kProfileSampleType = 1, kProfileSample = 2, kProfileMapping = 3,
                   kProfileLocation = 4, kProfileFunction = 5, kProfileStringTable = 6,
                   kProfileTimeNanos = 9, kProfileDurationNanos = 10, kProfilePeriodType = 11,
                   kProfilePeriod = 12, kProfileComment = 13, kProfileDefaultSampleType = 14;
constexpr uint32_t kValueTypeType = 1, kValueTypeUnit = 2;
constexpr uint32_t kSampleLocationId = 1, kSampleValue = 2;
constexpr uint32_t kMappingId = 1, kMappingMemoryStart = 2, kMappingMemoryLimit = 3,
                   kMappingFileOffset = 4, kMappingFilename = 5, kMappingBuildId = 6,
                   kMappingHasFunctions = 7, kMappingHasFilenames = 8, kMappingHasLineNumbers = 9;
constexpr uint32_t kLocationId = 1, kLocationMappingId = 2, kLocationAddress = 3, kLocationLine = 4;
constexpr uint32_t kLineFunctionId = 1, kLineLine = 2;
constexpr uint32_t kFunctionId = 1, kFunctionName = 2, kFunctionSystemName = 3,
                   kFunctionFilename = 4;
}  // namespace proto

// Ids for distinct keys in order of first sight. pprof ids start at 1 (0 means "none"), string
// table indexes at 0.
template <typename Key>
class Ids {
 public:
  explicit Ids(uint64_t first) : next_(first) {}
  // The key's id, and whether this call gave it.
  std::pair<uint64_t, bool> intern(const Key& key) {
    auto [it, inserted] = ids_.try_emplace(key, next_);
    if (inserted) ++next_;
    return {it->second, inserted};
  }

 private:
  std::map<Key, uint64_t> ids_;
  uint64_t next_;
};

// Writes the Profile message. Repeated fields may come in any order on the wire, so each
// Mapping, Function and Location goes out when first needed, and the string table, which they
// all point into, last.
class ProfileEncoder {
 public:
  explicit ProfileEncoder(const StackProfile& profile)
      : profile_(profile), location_of_frame_(profile.frames.size(), 0) {
    strings_.push_back("");  // profile.proto: string_table[0] must be ""
    string_ids_.intern("");
  }

  std::string encode() {
    write_header();
    write_mappings();
    for (const Sample& sample : profile_.samples) write_sample(sample);
    for (const std::string& text : strings_) out_.bytes_field(proto::kProfileStringTable, text);
    return out_.bytes();
  }

 private:
  int64_t string_id(const std::string& text) {
    auto [id, added] = string_ids_.intern(text);
    if (added) strings_.push_back(text);
    return static_cast<int64_t>(id);
  }

  void value_type(uint32_t field, const std::string& type, const std::string& unit) {
    ProtobufWriter message;
    message.int64_field(proto::kValueTypeType, string_id(type));
    message.int64_field(proto::kValueTypeUnit, string_id(unit));
    out_.message_field(field, message);
  }

  // As Go's runtime writes heap profiles (runtime/pprof/protomem.go), but with period 1: every
  // allocation is counted, none sampled, so the values need no scaling.
  void write_header() {
    for (SampleValue value : kSampleValues) {
      value_type(proto::kProfileSampleType, std::string(sample_value_name(value)),
                 is_bytes(value) ? "bytes" : "count");
    }
    value_type(proto::kProfilePeriodType, "space", "bytes");
    out_.int64_field(proto::kProfilePeriod, 1);
    out_.int64_field(proto::kProfileDefaultSampleType,
                     string_id(std::string(sample_value_name(SampleValue::kInuseSpace))));
    if (profile_.time_nanos != 0) out_.int64_field(proto::kProfileTimeNanos, profile_.time_nanos);
    if (profile_.duration_nanos != 0) {
      out_.int64_field(proto::kProfileDurationNanos, profile_.duration_nanos);
    }
    if (!profile_.title.empty()) {
      out_.int64_field(proto::kProfileComment, string_id(profile_.title));
    }
  }

  // All mappings up front: has_filenames and has_line_numbers describe all of a mapping's frames.
  void write_mappings() {
    struct Symbols {
      bool files = false, lines = false;
    };
    std::map<std::string, Symbols> symbols;
    for (const Frame& frame : profile_.frames) {
      Symbols& of = symbols[frame.library];
      of.files |= !frame.file.empty();
      of.lines |= frame.line != 0;
    }
    auto write = [&](const Library& library) {
      auto [id, added] = mapping_ids_.intern(library.path);
      if (!added) return;
      const Symbols& of = symbols[library.path];
      ProtobufWriter message;
      message.uint64_field(proto::kMappingId, id);
      message.uint64_field(proto::kMappingMemoryStart, library.start);
      message.uint64_field(proto::kMappingMemoryLimit, library.limit);
      message.uint64_field(proto::kMappingFileOffset, library.file_offset);
      message.int64_field(proto::kMappingFilename, string_id(library.path));
      message.int64_field(proto::kMappingBuildId, string_id(library.build_id));
      // The caller symbolized what it could: pprof must not look for these files on the
      // machine that reads the profile, which may hold other versions of them.
      message.bool_field(proto::kMappingHasFunctions, true);
      message.bool_field(proto::kMappingHasFilenames, of.files);
      message.bool_field(proto::kMappingHasLineNumbers, of.lines);
      out_.message_field(proto::kProfileMapping, message);
    };
    for (const Library& library : profile_.libraries) write(library);
    for (const Frame& frame : profile_.frames) {
      if (!frame.library.empty()) write(Library{.path = frame.library});
    }
  }

  uint64_t function_id(const Frame& frame) {
    // By the symbol: two functions whose shown names are alike (overloads) stay two. pprof keeps
    // a name that differs from the system name; -symbolize=demangle=full demangles the latter.
    const std::string& system_name = frame.system_name.empty() ? frame.function : frame.system_name;
    auto [id, added] = function_ids_.intern({system_name, frame.file});
    if (added) {
      ProtobufWriter message;
      message.uint64_field(proto::kFunctionId, id);
      message.int64_field(proto::kFunctionName, string_id(frame.function));
      message.int64_field(proto::kFunctionSystemName, string_id(system_name));
      message.int64_field(proto::kFunctionFilename, string_id(frame.file));
      out_.message_field(proto::kProfileFunction, message);
    }
    return id;
  }

  uint64_t location_id(uint32_t frame_index) {
    uint64_t& cached = location_of_frame_[frame_index];
    if (cached != 0) return cached;
    const Frame& frame = profile_.frames[frame_index];
    const uint64_t mapping = frame.library.empty() ? 0 : mapping_ids_.intern(frame.library).first;
    const uint64_t function = frame.function.empty() ? 0 : function_id(frame);
    auto [id, added] = location_ids_.intern({mapping, frame.address, function, frame.line});
    if (added) {
      ProtobufWriter message;
      message.uint64_field(proto::kLocationId, id);
      message.uint64_field(proto::kLocationMappingId, mapping);
      message.uint64_field(proto::kLocationAddress, frame.address);
      if (function != 0) {
        ProtobufWriter line;
        line.uint64_field(proto::kLineFunctionId, function);
        line.int64_field(proto::kLineLine, frame.line);
        message.message_field(proto::kLocationLine, line);
      }
      out_.message_field(proto::kProfileLocation, message);
    }
    cached = id;
    return id;
  }

  void write_sample(const Sample& sample) {
    std::vector<uint64_t> locations;
    locations.reserve(sample.frames.size());
    for (uint32_t frame : sample.frames) locations.push_back(location_id(frame));
    std::vector<int64_t> values;
    for (SampleValue value : kSampleValues) values.push_back(sample.value(value));
    ProtobufWriter message;
    message.packed_uint64_field(proto::kSampleLocationId, locations);
    message.packed_int64_field(proto::kSampleValue, values);
    out_.message_field(proto::kProfileSample, message);
  }

  const StackProfile& profile_;
  ProtobufWriter out_;
  std::vector<std::string> strings_;
  Ids<std::string> string_ids_{0};
  Ids<std::string> mapping_ids_{1};
  // By name and file.
  Ids<std::pair<std::string, std::string>> function_ids_{1};
  // By mapping, address, function and line.
  Ids<std::tuple<uint64_t, uint64_t, uint64_t, uint32_t>> location_ids_{1};
  std::vector<uint64_t> location_of_frame_;  // 0: not written yet
};

}  // namespace

Result<std::string> pprof_message(const StackProfile& profile) {
  MEMPROF_TRY_STATUS(check_stack_profile(profile));
  return ProfileEncoder(profile).encode();
}

Result<std::string> pprof_file_bytes(const StackProfile& profile) {
  MEMPROF_TRY(message, pprof_message(profile));
  return gzip_compress(message);
}

Status write_pprof(const std::string& path, const StackProfile& profile) {
  return write_profile_file(path, pprof_file_bytes(profile));
}

}  // namespace memprof::profile
