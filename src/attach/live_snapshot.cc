#include "attach/live_snapshot.h"

#include <simdjson.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "attach/agent_client.h"

namespace memprof::attach {

Result<LiveSnapshot> parse_snapshot(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json).get(root) != simdjson::SUCCESS) return err("malformed reply from the agent");
  LiveSnapshot snapshot;
  simdjson::dom::array groups;
  if (root["time"].get(snapshot.time) != simdjson::SUCCESS ||
      root["total_allocated"].get(snapshot.total_allocated) != simdjson::SUCCESS ||
      root["gc_count"].get(snapshot.gc_count) != simdjson::SUCCESS ||
      root["groups"].get(groups) != simdjson::SUCCESS)
    return err("malformed reply from the agent (groups)");
  for (simdjson::dom::element row : groups) {
    simdjson::dom::array fields;
    if (row.get(fields) != simdjson::SUCCESS || fields.size() != 5) continue;
    LiveGroup group{};
    std::string_view file, class_name;
    int64_t line = 0;
    if (fields.at(0).get(file) || fields.at(1).get(line) || fields.at(2).get(class_name) ||
        fields.at(3).get(group.count) || fields.at(4).get(group.bytes))
      continue;
    group.file = file;
    group.line = static_cast<int>(line);
    group.class_name = class_name;
    snapshot.groups.push_back(std::move(group));
  }
  if (std::string_view note; root["note"].get(note) == simdjson::SUCCESS) snapshot.notes.emplace_back(note);
  return snapshot;
}

Result<LiveSnapshot> read_snapshot(pid_t pid, Collect collect, Notes notes) {
  std::string request = "groups";
  if (collect == Collect::kGarbageFirst) request += " gc";
  if (notes == Notes::kTake) request += " note";
  MEMPROF_TRY(json, ruby_request(pid, request));
  MEMPROF_TRY(snapshot, parse_snapshot(json));
  for (std::string& note : snapshot.notes) note = fmt::format("process {}: {}", pid, note);
  return snapshot;
}

Result<LiveSnapshot> read_snapshot(const std::vector<pid_t>& pids, Collect collect, Notes notes) {
  LiveSnapshot total;
  std::map<std::tuple<std::string, int, std::string>, LiveGroup> merged;
  std::optional<Error> first_error;
  size_t read = 0;
  for (pid_t pid : pids) {
    auto reading = read_snapshot(pid, collect, notes);
    if (!reading.ok()) {
      if (!first_error) first_error = reading.error();
      total.left_out.push_back(fmt::format("process {}: {}", pid, reading.message()));
      continue;
    }
    ++read;
    LiveSnapshot& snapshot = *reading;
    total.time = std::max(total.time, snapshot.time);
    total.total_allocated += snapshot.total_allocated;
    total.gc_count += snapshot.gc_count;
    total.notes.insert(total.notes.end(), snapshot.notes.begin(), snapshot.notes.end());
    for (LiveGroup& group : snapshot.groups) {
      auto [it, fresh] = merged.try_emplace({group.file, group.line, group.class_name}, group);
      if (!fresh) {
        it->second.count += group.count;
        it->second.bytes += group.bytes;
      }
    }
  }
  if (read == 0 && first_error) return *first_error;
  for (auto& [key, group] : merged) total.groups.push_back(std::move(group));
  // Memprof.stats' order: count descending, then file, line, class.
  std::sort(total.groups.begin(), total.groups.end(), [](const LiveGroup& a, const LiveGroup& b) {
    return std::tie(b.count, a.file, a.line, a.class_name) <
           std::tie(a.count, b.file, b.line, b.class_name);
  });
  return total;
}

namespace {

std::string group_where(const LiveGroup& group) {
  return group.line < 0 ? group.file : fmt::format("{}:{}", group.file, group.line);
}

}  // namespace

std::string row_key(const LiveGroup& group, Grouping grouping) {
  std::string where = group_where(group);
  switch (grouping) {
    case Grouping::kClass: return group.class_name;
    case Grouping::kSite: return where;
    case Grouping::kBoth: break;
  }
  return fmt::format("{} {}", where, group.class_name);
}

Grouping shown_grouping(const LiveSnapshot& snapshot, Grouping chosen) {
  return snapshot.ruby_lines ? chosen : Grouping::kClass;
}

std::vector<Row> rows_of(const LiveSnapshot& now, const LiveSnapshot* before, Grouping chosen) {
  const Grouping grouping = shown_grouping(now, chosen);
  std::unordered_map<std::string, Row> rows;
  for (const LiveGroup& group : now.groups) {
    Row& row = rows[row_key(group, grouping)];
    if (grouping == Grouping::kBoth && row.what.empty()) {
      row.where = group_where(group);
      row.what = group.class_name;
    }
    row.count += group.count;
    row.bytes += group.bytes;
  }
  if (before != nullptr) {
    for (auto& [key, row] : rows) row.growth = static_cast<int64_t>(row.count);
    for (const LiveGroup& group : before->groups) {
      auto it = rows.find(row_key(group, grouping));
      if (it != rows.end()) it->second.growth -= static_cast<int64_t>(group.count);
    }
  }
  std::vector<Row> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) {
    row.key = key;
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace memprof::attach
