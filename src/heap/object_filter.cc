#include "heap/object_filter.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "heap/utf8_repair.h"

namespace memprof::heap {
namespace {

// `text` names `path` when it is the whole path or its tail after a '/'.
bool names(std::string_view path, std::string_view text) {
  if (path == text) return true;
  return path.size() > text.size() && path.ends_with(text) && path[path.size() - text.size() - 1] == '/';
}

}  // namespace

ClassKey class_key(const Heap& heap, ObjectId id) {
  const ObjectType type = heap.type[id];
  const bool has_detail = type == ObjectType::kImemo || type == ObjectType::kData;
  return {type == ObjectType::kImemo ? kNoObject : heap.class_of[id], has_detail ? heap.detail[id] : 0, type};
}

std::string ObjectFilter::describe() const {
  std::vector<std::string> parts;
  if (!class_label.empty()) parts.push_back("class " + class_label);
  if (!site.empty()) parts.push_back("site " + site);
  if (!type.empty()) parts.push_back("type " + type);
  return fmt::format("{}", fmt::join(parts, ", "));
}

Result<ObjectSelection> ObjectSelection::make(const Heap& heap, const ObjectFilter& filter) {
  ObjectSelection selection;
  selection.all_ = filter.empty();
  if (selection.all_) return selection;
  ObjectType type = ObjectType::kCount;  // any
  if (!filter.type.empty()) {
    std::string upper = filter.type;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
    type = parse_object_type(upper);
    if (type == ObjectType::kUnknown) {
      return err("--type {}: not an object type (STRING, ARRAY, HASH, OBJECT, DATA, IMEMO, CLASS, ...)",
                 filter.type);
    }
  }
  // Sites and class labels are decided once each: a heap has far fewer of them than objects.
  // The reader stored names that are not UTF-8 (Ruby writes file names as raw bytes) with
  // U+FFFD in place of the bad bytes: the filter, typed with those raw bytes, is read likewise.
  std::string site, class_label;
  append_repaired_utf8(filter.site, site);
  append_repaired_utf8(filter.class_label, class_label);
  std::vector<uint8_t> site_selected;  // by SiteId; empty: any site
  if (!site.empty()) {
    site_selected.assign(heap.sites.size(), 0);
    for (size_t s = 1; s < heap.sites.size(); ++s) {
      std::string_view file = heap.str(heap.sites[s].file);
      site_selected[s] = names(file, site) || names(fmt::format("{}:{}", file, heap.sites[s].line), site);
    }
  }
  std::unordered_map<ClassKey, bool, ClassKeyHash> class_selected;
  auto class_matches = [&](ObjectId id) {
    auto [it, inserted] = class_selected.try_emplace(class_key(heap, id), false);
    if (inserted) it->second = heap.class_label(id) == class_label;
    return it->second;
  };
  selection.selected_.resize(heap.size());
  for (ObjectId id = 0; id < heap.size(); ++id) {
    selection.selected_[id] = (type == ObjectType::kCount || heap.type[id] == type) &&
                              (site_selected.empty() || site_selected[heap.site[id]] != 0) &&
                              (class_label.empty() || class_matches(id));
  }
  return selection;
}

}  // namespace memprof::heap
