#include "attach/report_profile.h"

#include <simdjson.h>

#include <charconv>
#include <map>
#include <utility>

namespace memprof::attach {
namespace {

constexpr const char* kMalformed = "not a memprof report (Memprof::Report#to_json, memprof report --json)";

struct Counts {
  int64_t allocated_objects = 0, allocated_bytes = 0, retained_objects = 0, retained_bytes = 0;
};

// "app/models/user.rb:12" -> file and line (0 when the text has none).
std::pair<std::string, uint32_t> split_location(std::string_view location) {
  size_t colon = location.rfind(':');
  uint32_t line = 0;
  if (colon != std::string_view::npos) {
    auto [end, error] = std::from_chars(location.data() + colon + 1, location.data() + location.size(), line);
    if (error == std::errc() && end == location.data() + location.size())
      return {std::string(location.substr(0, colon)), line};
  }
  return {std::string(location), 0};
}

// Adds a section's by_location rows to `rows` (allocated or retained).
Status add_section(simdjson::dom::element section, bool retained,
                   std::map<std::pair<std::string, std::string>, Counts>& rows) {
  simdjson::dom::array by_location;
  if (section["by_location"].get(by_location)) return err("{}", kMalformed);
  for (simdjson::dom::element row : by_location) {
    std::string_view location, class_name;
    int64_t count = 0, bytes = 0;
    if (row["location"].get(location) || row["class"].get(class_name) || row["count"].get(count) ||
        row["bytes"].get(bytes))
      return err("{} (a by_location row)", kMalformed);
    Counts& counts = rows[{std::string(location), std::string(class_name)}];
    (retained ? counts.retained_objects : counts.allocated_objects) += count;
    (retained ? counts.retained_bytes : counts.allocated_bytes) += bytes;
  }
  return ok_status();
}

}  // namespace

Result<profile::StackProfile> ruby_report_stack_profile(std::string_view report_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root, report, allocated, retained;
  if (parser.parse(report_json.data(), report_json.size()).get(root)) return err("{}", kMalformed);
  if (root["report"].get(report)) report = root;  // a report alone, or inside --json's reply
  if (report["allocated"].get(allocated) || report["retained"].get(retained)) return err("{}", kMalformed);
  std::map<std::pair<std::string, std::string>, Counts> rows;
  MEMPROF_TRY_STATUS(add_section(allocated, false, rows));
  MEMPROF_TRY_STATUS(add_section(retained, true, rows));

  profile::StackProfile out;
  out.title = "memprof report (Ruby objects: allocated, and retained at the end)";
  std::map<std::string, uint32_t> frame_of;  // "L" + location or "C" + class -> frame index
  auto frame = [&](std::string key, profile::Frame value) {
    auto [it, fresh] = frame_of.try_emplace(std::move(key), static_cast<uint32_t>(out.frames.size()));
    if (fresh) out.frames.push_back(std::move(value));
    return it->second;
  };
  for (const auto& [key, counts] : rows) {
    const auto& [location, class_name] = key;
    auto [file, line] = split_location(location);
    profile::Sample& sample = out.samples.emplace_back();
    sample.frames = {frame("C" + class_name, {.function = class_name, .library = "ruby"}),
                     frame("L" + location, {.function = location, .library = "ruby", .file = file, .line = line})};
    sample.alloc_objects = counts.allocated_objects;
    sample.alloc_space = counts.allocated_bytes;
    sample.inuse_objects = counts.retained_objects;
    sample.inuse_space = counts.retained_bytes;
  }
  return out;
}

}  // namespace memprof::attach
