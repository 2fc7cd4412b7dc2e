#include "profile/pprof_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "heap/byte_source.h"
#include "sample_profiles.h"
#include "support/command_runner.h"

namespace memprof::profile {
namespace {

std::string gunzip(const std::string& bytes) {
  auto source = heap::open_memory_source(
      {reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}, "profile.pb.gz");
  EXPECT_TRUE(source.ok()) << source.message();
  if (!source.ok()) return "";
  EXPECT_EQ((*source)->compression(), heap::Compression::kGzip);
  std::string out;
  char buffer[4096];
  while (true) {
    auto n = (*source)->read(buffer);
    EXPECT_TRUE(n.ok()) << n.message();
    if (!n.ok() || *n == 0) break;
    out.append(buffer, *n);
  }
  return out;
}

// The top-level fields of a protobuf message: varints as numbers, length-delimited fields as
// bytes, by field number in wire order. Enough to check the layout without pprof.
struct Fields {
  std::map<uint32_t, std::vector<uint64_t>> varints;
  std::map<uint32_t, std::vector<std::string>> bytes;
};

uint64_t read_varint(const std::string& in, size_t& at) {
  uint64_t value = 0;
  for (int shift = 0; at < in.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(in[at++]);
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) break;
  }
  return value;
}

Fields parse(const std::string& message) {
  Fields fields;
  size_t at = 0;
  while (at < message.size()) {
    const uint64_t key = read_varint(message, at);
    const auto field = static_cast<uint32_t>(key >> 3);
    if ((key & 7) == 0) {
      fields.varints[field].push_back(read_varint(message, at));
    } else {
      EXPECT_EQ(key & 7, 2u) << "field " << field;
      const uint64_t size = read_varint(message, at);
      fields.bytes[field].push_back(message.substr(at, size));
      at += size;
    }
  }
  EXPECT_EQ(at, message.size());
  return fields;
}

TEST(Pprof, FileIsAGzippedProfileMessage) {
  auto message = pprof_message(testing::leak_profile());
  ASSERT_TRUE(message.ok()) << message.message();
  auto file = pprof_file_bytes(testing::leak_profile());
  ASSERT_TRUE(file.ok()) << file.message();
  ASSERT_GT(file->size(), 2u);
  EXPECT_EQ(file->substr(0, 2), "\x1f\x8b");
  EXPECT_EQ(gunzip(*file), *message);
}

TEST(Pprof, GoHeapProfileLayout) {
  auto message = pprof_message(testing::leak_profile());
  ASSERT_TRUE(message.ok()) << message.message();
  Fields profile = parse(*message);
  const std::vector<std::string>& strings = profile.bytes[6];
  ASSERT_FALSE(strings.empty());
  EXPECT_EQ(strings[0], "");
  auto string_at = [&strings](uint64_t index) {
    return index < strings.size() ? strings[index] : "<index " + std::to_string(index) + ">";
  };
  auto value_type = [&](const std::string& bytes) {
    Fields type = parse(bytes);
    return string_at(type.varints[1].at(0)) + "/" + string_at(type.varints[2].at(0));
  };
  std::vector<std::string> sample_types;
  for (const std::string& type : profile.bytes[1]) sample_types.push_back(value_type(type));
  EXPECT_EQ(sample_types, (std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes",
                                                    "inuse_objects/count", "inuse_space/bytes"}));
  EXPECT_EQ(value_type(profile.bytes[11].at(0)), "space/bytes");              // period_type
  EXPECT_EQ(profile.varints[12], std::vector<uint64_t>{1});                   // period
  EXPECT_EQ(string_at(profile.varints[14].at(0)), "inuse_space");             // default type
  EXPECT_EQ(profile.varints[9], std::vector<uint64_t>{1700000000000000000});  // time_nanos
  EXPECT_EQ(profile.varints[10], std::vector<uint64_t>{10000000000});         // duration
  EXPECT_EQ(string_at(profile.varints[13].at(0)), "memprof native -p 4242");  // comment

  EXPECT_EQ(profile.bytes[2].size(), 1u);  // samples
  EXPECT_EQ(profile.bytes[3].size(), 3u);  // mappings: ruby, libruby, libleak
  EXPECT_EQ(profile.bytes[4].size(), 3u);  // locations
  EXPECT_EQ(profile.bytes[5].size(), 3u);  // functions
  for (const char* text : {"main", "ruby_line", "leak_it", "leak.c", "/usr/lib/libleak.so"}) {
    EXPECT_NE(std::find(strings.begin(), strings.end(), text), strings.end()) << text;
  }
  // Every string once.
  EXPECT_EQ(std::set<std::string>(strings.begin(), strings.end()).size(), strings.size());
}

TEST(Pprof, LocationsAreDeduplicatedAndUnknownFunctionsHaveNoLine) {
  StackProfile profile = testing::shop_profile();
  profile.frames.push_back(profile.frames[0]);  // main again, as another frame
  profile.samples.push_back({.frames = {2, 1, 8}, .alloc_objects = 1});
  auto message = pprof_message(profile);
  ASSERT_TRUE(message.ok()) << message.message();
  Fields fields = parse(*message);
  EXPECT_EQ(fields.bytes[4].size(), 8u);  // 9 frames, main twice
  EXPECT_EQ(fields.bytes[5].size(), 7u);  // the frame in libfoo.so has no function
  EXPECT_EQ(fields.bytes[3].size(), 5u);  // ruby, libruby, libleak, libfoo, libweird
  int without_line = 0;
  for (const std::string& location : fields.bytes[4]) {
    without_line += parse(location).bytes[4].empty();
  }
  EXPECT_EQ(without_line, 1);
  // Leaf first: the new sample's locations are leak_it's, ruby_line's and main's, the ids the
  // first sample gave them (leaf first too).
  Fields sample = parse(fields.bytes[2].back());
  EXPECT_EQ(sample.bytes[1].at(0), std::string("\x01\x02\x03", 3));
}

// A C++ function: its short name to show, its symbol as the system name (pprof's
// -symbolize=demangle=full demangles that one). Two symbols alike when short stay two functions.
TEST(Pprof, FunctionsHaveTheirShownNameAndTheirSymbol) {
  StackProfile profile = testing::leak_profile();
  profile.frames[2].function = "leak_pairs<...>";  // leak_it's frame
  profile.frames[2].system_name = "_Z10leak_pairsIlEvi";
  Frame other = profile.frames[2];
  other.system_name = "_Z10leak_pairsIiEvi";
  other.address += 0x40;
  profile.frames.push_back(other);
  profile.samples.push_back({.frames = {static_cast<uint32_t>(profile.frames.size() - 1)}, .alloc_objects = 1});
  auto message = pprof_message(profile);
  ASSERT_TRUE(message.ok()) << message.message();
  Fields fields = parse(*message);
  const std::vector<std::string>& strings = fields.bytes[6];
  std::set<std::pair<std::string, std::string>> functions;  // name, system name
  for (const std::string& function : fields.bytes[5]) {
    Fields parsed = parse(function);
    functions.insert({strings.at(parsed.varints[2].at(0)), strings.at(parsed.varints[3].at(0))});
  }
  EXPECT_TRUE(functions.contains({"leak_pairs<...>", "_Z10leak_pairsIlEvi"}));
  EXPECT_TRUE(functions.contains({"leak_pairs<...>", "_Z10leak_pairsIiEvi"}));
  EXPECT_TRUE(functions.contains({"main", "main"}));  // a C name is its own system name
}

TEST(Pprof, ListedLibrariesComeFirstWithTheirRanges) {
  StackProfile profile = testing::leak_profile();
  profile.libraries = {{.path = "/usr/lib/libleak.so",
                        .start = 0x7f0000200000,
                        .limit = 0x7f0000210000,
                        .file_offset = 0x1000,
                        .build_id = "abcdef"}};
  auto message = pprof_message(profile);
  ASSERT_TRUE(message.ok()) << message.message();
  Fields fields = parse(*message);
  ASSERT_EQ(fields.bytes[3].size(), 3u);
  Fields first = parse(fields.bytes[3][0]);
  EXPECT_EQ(first.varints[1], std::vector<uint64_t>{1});
  EXPECT_EQ(first.varints[2], std::vector<uint64_t>{0x7f0000200000});
  EXPECT_EQ(first.varints[3], std::vector<uint64_t>{0x7f0000210000});
  EXPECT_EQ(first.varints[4], std::vector<uint64_t>{0x1000});
  EXPECT_EQ(fields.bytes[6].at(first.varints[5].at(0)), "/usr/lib/libleak.so");
  EXPECT_EQ(fields.bytes[6].at(first.varints[6].at(0)), "abcdef");
  EXPECT_EQ(first.varints[7], std::vector<uint64_t>{1});  // has_functions
}

TEST(Pprof, WrittenToAFileOrAnError) {
  memprof::testing::TempDir dir;
  const std::string path = dir.file("heap.pb.gz");
  ASSERT_TRUE(write_pprof(path, testing::leak_profile()).ok());
  auto message = pprof_message(testing::leak_profile());
  ASSERT_TRUE(message.ok());
  EXPECT_EQ(gunzip(memprof::testing::read_file(path)), *message);

  StackProfile bad = testing::leak_profile();
  bad.samples[0].inuse_objects = -1;
  EXPECT_EQ(write_pprof(dir.file("bad.pb.gz"), bad).message(),
            "sample 0: inuse_objects is negative (-1)");
  EXPECT_EQ(memprof::testing::read_file(dir.file("bad.pb.gz")), "");
}

}  // namespace
}  // namespace memprof::profile
