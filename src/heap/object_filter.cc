#include "heap/object_filter.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
  selection.heap_ = &heap;
  selection.all_ = filter.empty();
  if (!filter.type.empty()) {
    std::string upper = filter.type;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
    selection.type_ = parse_object_type(upper);
    if (selection.type_ == ObjectType::kUnknown) {
      return err("--type {}: not an object type (STRING, ARRAY, HASH, OBJECT, DATA, IMEMO, CLASS, ...)",
                 filter.type);
    }
  }
  if (!filter.site.empty()) {
    selection.site_selected_.assign(heap.sites.size(), 0);
    for (size_t s = 1; s < heap.sites.size(); ++s) {
      std::string_view file = heap.str(heap.sites[s].file);
      selection.site_selected_[s] =
          names(file, filter.site) || names(fmt::format("{}:{}", file, heap.sites[s].line), filter.site);
    }
  }
  selection.class_label_ = filter.class_label;
  return selection;
}

bool ObjectSelection::class_matches(ObjectId id) const {
  auto [it, inserted] = class_cache_.try_emplace(class_key(*heap_, id), false);
  if (inserted) it->second = heap_->class_label(id) == class_label_;
  return it->second;
}

}  // namespace memprof::heap
