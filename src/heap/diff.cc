#include "heap/diff.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "heap/analysis.h"

namespace memprof::heap {
namespace {

// A 64-bit digest of (type, class label, file, line) comparable across dumps: computed from the
// strings, not from ids that are private to each dump. Cached per class and per site.
class Signatures {
 public:
  explicit Signatures(const Heap& heap) : heap_(heap), site_hash_(heap.sites.size()) {
    std::hash<std::string_view> hash;
    for (size_t s = 0; s < heap.sites.size(); ++s) {
      site_hash_[s] = hash(heap.str(heap.sites[s].file)) * 31 + heap.sites[s].line;
    }
  }
  uint64_t of(ObjectId id) {
    // What class_label() depends on, tagged in the top bits: the IMEMO type, the class object,
    // or (no class) the object type.
    uint64_t key;
    if (heap_.type[id] == ObjectType::kImemo) {
      key = (uint64_t{1} << 62) | heap_.detail[id];
    } else if (heap_.class_of[id] != kNoObject) {
      key = (uint64_t{2} << 62) | (uint64_t{heap_.class_of[id]} << 8) | static_cast<uint64_t>(heap_.type[id]);
    } else {
      key = (uint64_t{3} << 62) | static_cast<uint64_t>(heap_.type[id]);
    }
    auto found = class_hash_.find(key);
    if (found == class_hash_.end()) {
      uint64_t h = std::hash<std::string>()(heap_.class_label(id)) * 131 +
                   static_cast<uint64_t>(heap_.type[id]);
      found = class_hash_.emplace(key, h).first;
    }
    return found->second * 0x9E3779B97F4A7C15ull + site_hash_[heap_.site[id]];
  }

 private:
  const Heap& heap_;
  std::vector<uint64_t> site_hash_;
  std::unordered_map<uint64_t, uint64_t> class_hash_;
};

uint32_t max_generation(const Heap& heap) {
  uint32_t best = kNoGeneration;
  for (uint32_t g : heap.generation) {
    if (g != kNoGeneration && (best == kNoGeneration || g > best)) best = g;
  }
  return best;
}

uint64_t pair_key(uint64_t signature, uint32_t generation) {
  return signature * 0x100000001B3ull ^ generation;
}

}  // namespace

DiffResult diff_heaps(const Heap& a, const Heap& b, const Heap* c) {
  DiffResult result;
  result.has_third = c != nullptr;
  Signatures sig_a(a), sig_b(b);
  const uint32_t a_max = max_generation(a);
  result.generations = a_max != kNoGeneration && max_generation(b) != kNoGeneration;

  // 1. New in B.
  std::vector<ObjectId> fresh;
  std::vector<uint64_t> fresh_signature;
  for (ObjectId id = 0; id < b.size(); ++id) {
    uint64_t signature = sig_b.of(id);
    ObjectId in_a = a.find(b.address[id]);
    if (in_a != kNoObject) {
      if (sig_a.of(in_a) == signature) continue;
      ++result.address_mismatches;
    }
    if (result.generations) {
      uint32_t g = b.generation[id];
      // Untraced objects were allocated before tracing began, hence before A; traced ones
      // below A's highest generation were allocated before A's last GC.
      if (g == kNoGeneration || g < a_max) {
        ++result.old_by_generation;
        continue;
      }
    }
    fresh.push_back(id);
    fresh_signature.push_back(signature);
    ++result.new_count;
    result.new_memsize += b.memsize[id];
  }

  // 2. Still alive in C: by address first, then (with generations) by signature + generation
  // among the objects of C no address match claimed.
  std::vector<uint8_t> kept(fresh.size(), c == nullptr ? 1 : 0);
  if (c != nullptr) {
    Signatures sig_c(*c);
    std::vector<uint8_t> claimed(c->size(), 0);
    for (size_t i = 0; i < fresh.size(); ++i) {
      ObjectId in_c = c->find(b.address[fresh[i]]);
      if (in_c != kNoObject && !claimed[in_c] && sig_c.of(in_c) == fresh_signature[i]) {
        claimed[in_c] = 1;
        kept[i] = 1;
      }
    }
    if (result.generations && max_generation(*c) != kNoGeneration) {
      std::unordered_map<uint64_t, uint32_t> unclaimed;
      for (ObjectId id = 0; id < c->size(); ++id) {
        if (!claimed[id] && c->generation[id] != kNoGeneration) {
          ++unclaimed[pair_key(sig_c.of(id), c->generation[id])];
        }
      }
      for (size_t i = 0; i < fresh.size(); ++i) {
        if (kept[i]) continue;
        auto found = unclaimed.find(pair_key(fresh_signature[i], b.generation[fresh[i]]));
        if (found != unclaimed.end() && found->second > 0) {
          --found->second;
          kept[i] = 1;
          ++result.kept_by_generation;
        }
      }
    }
  }

  // 3. Group the kept objects by (site, class label).
  std::map<std::pair<std::string, std::string>, DiffRow> groups;
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (!kept[i]) continue;
    ObjectId id = fresh[i];
    ++result.kept_count;
    result.kept_memsize += b.memsize[id];
    std::string location = b.site_label(id);
    if (location.empty()) location = std::string(kNoSite);
    std::string class_name = b.class_label(id);
    DiffRow& row = groups[{location, class_name}];
    if (row.count == 0) {
      row.location = location;
      row.class_name = class_name;
    }
    ++row.count;
    row.memsize += b.memsize[id];
  }
  for (auto& [key, row] : groups) result.rows.push_back(std::move(row));
  std::stable_sort(result.rows.begin(), result.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    if (x.memsize != y.memsize) return x.memsize > y.memsize;
    return x.count > y.count;
  });
  return result;
}

}  // namespace memprof::heap
