// Interned strings (class names, file paths, root kinds): each distinct string stored once,
// referenced by a 32-bit id. Id 0 is the empty string.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memprof::heap {

using StringId = uint32_t;

class StringPool {
 public:
  StringPool() { strings_.emplace_back(); }
  // Moving keeps the deque's elements in place, so the map's views stay valid; a copy would not.
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  StringId intern(std::string_view text) {
    if (text.empty()) return 0;
    auto found = ids_.find(text);
    if (found != ids_.end()) return found->second;
    // std::deque never moves its elements, so the views used as map keys stay valid.
    const std::string& stored = strings_.emplace_back(text);
    auto id = static_cast<StringId>(strings_.size() - 1);
    ids_.emplace(std::string_view(stored), id);
    return id;
  }
  // The id of `text` if interned, else 0.
  StringId find(std::string_view text) const {
    auto found = ids_.find(text);
    return found == ids_.end() ? 0 : found->second;
  }
  std::string_view view(StringId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, StringId> ids_;
};

}  // namespace memprof::heap
