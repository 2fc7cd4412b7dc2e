#include "core/track/aggregate.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace memprof::track {

namespace {
struct GroupKeyHash {
  size_t operator()(const std::pair<uint32_t, uint64_t>& k) const {
    return std::hash<uint64_t>()(k.second * 0x9E3779B97F4A7C15ull ^ k.first);
  }
};
}  // namespace

std::vector<Group> group_samples(const std::vector<Sample>& samples) {
  std::unordered_map<std::pair<uint32_t, uint64_t>, size_t, GroupKeyHash> index;
  std::vector<Group> groups;
  for (const Sample& s : samples) {
    auto [it, fresh] = index.try_emplace({s.site, s.class_key}, groups.size());
    if (fresh) groups.push_back(Group{s.site, s.class_key, 0, 0});
    Group& g = groups[it->second];
    ++g.count;
    g.bytes += s.bytes;
  }
  return groups;
}

std::vector<NamedGroup> name_groups(const std::vector<Group>& groups, const SiteTable& sites,
                                    const std::function<std::string(uint64_t)>& class_name) {
  std::unordered_map<uint64_t, std::string> names;
  std::map<std::tuple<std::string_view, int, std::string>, NamedGroup> merged;
  for (const Group& g : groups) {
    auto [name, fresh] = names.try_emplace(g.class_key);
    if (fresh) name->second = class_name(g.class_key);
    std::string_view file = sites.file(g.site);
    auto [it, inserted] = merged.try_emplace({file, sites.line(g.site), name->second},
                                             NamedGroup{std::string(file), sites.line(g.site),
                                                        name->second, 0, 0});
    it->second.count += g.count;
    it->second.bytes += g.bytes;
  }
  std::vector<NamedGroup> out;
  out.reserve(merged.size());
  for (auto& [key, group] : merged) out.push_back(std::move(group));
  std::stable_sort(out.begin(), out.end(),
                   [](const NamedGroup& a, const NamedGroup& b) { return a.count > b.count; });
  return out;
}

std::string stats_line(const NamedGroup& group) {
  return fmt::format("{:7d} {}:{}:{}", group.count, group.file, group.line, group.class_name);
}

}  // namespace memprof::track
