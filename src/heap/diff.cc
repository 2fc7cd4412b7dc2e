#include "heap/diff.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "heap/analysis.h"
#include "heap/top_lists.h"

namespace memprof::heap {
namespace {

// 64-bit digests comparable across dumps, computed from strings, not from ids private to each
// dump: of an object's class (class label and type) and of its signature (class and site).
// Cached per class and per site.
class Signatures {
 public:
  explicit Signatures(const Heap& heap) : heap_(heap), site_hash_(heap.sites.size()) {
    std::hash<std::string_view> hash;
    for (size_t s = 0; s < heap.sites.size(); ++s) {
      site_hash_[s] = hash(heap.str(heap.sites[s].file)) * 31 + heap.sites[s].line;
    }
  }
  uint64_t class_of(ObjectId id) {
    auto [it, inserted] = class_hash_.try_emplace(class_key(heap_, id), 0);
    if (inserted) {
      it->second = std::hash<std::string>()(heap_.class_label(id)) * 131 + static_cast<uint64_t>(heap_.type[id]);
    }
    return it->second;
  }
  uint64_t of(ObjectId id) { return class_of(id) * 0x9E3779B97F4A7C15ull + site_hash_[heap_.site[id]]; }

 private:
  const Heap& heap_;
  std::vector<uint64_t> site_hash_;
  std::unordered_map<ClassKey, uint64_t, ClassKeyHash> class_hash_;
};

uint32_t max_generation(const Heap& heap) {
  uint32_t best = kNoGeneration;
  for (uint32_t g : heap.generation) {
    if (g != kNoGeneration && (best == kNoGeneration || g > best)) best = g;
  }
  return best;
}

uint64_t with_generation(uint64_t signature, uint32_t generation) {
  return signature * 0x100000001B3ull ^ generation;
}

// Takes one from the count of `key`, if any is left.
bool take(std::unordered_map<uint64_t, int64_t>& counts, uint64_t key) {
  auto found = counts.find(key);
  if (found == counts.end() || found->second <= 0) return false;
  --found->second;
  return true;
}

// Groups objects of B into rows by (location, class), memsize descending, each with up to
// `samples` of its largest objects.
std::vector<DiffRow> group_rows(const Heap& b, const std::vector<ObjectId>& ids, size_t samples,
                                std::string_view no_site) {
  std::map<std::pair<std::string, std::string>, std::pair<DiffRow, std::vector<ObjectId>>> groups;
  for (ObjectId id : ids) {
    std::string location = b.site_label(id);
    if (location.empty()) location = std::string(no_site);
    auto& [row, members] = groups[{location, b.class_label(id)}];
    ++row.count;
    row.memsize += b.memsize[id];
    if (samples > 0) members.push_back(id);
  }
  std::vector<DiffRow> rows;
  for (auto& [key, group] : groups) {
    auto& [row, members] = group;
    row.location = key.first;
    row.class_name = key.second;
    row.samples = largest_first(b, members, samples);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& x, const DiffRow& y) {
    if (x.memsize != y.memsize) return x.memsize > y.memsize;
    return x.count > y.count;
  });
  return rows;
}

constexpr std::string_view kNoAllocationInfo = "(no allocation info)";

}  // namespace

DiffResult diff_heaps(const Heap& a, const Heap& b, const Heap* c, const DiffOptions& options) {
  DiffResult result;
  result.has_third = c != nullptr;
  Signatures sig_a(a), sig_b(b);
  result.max_generation_a = max_generation(a);
  result.max_generation_b = max_generation(b);
  const uint32_t a_max = result.max_generation_a;
  const bool traced = a_max != kNoGeneration && result.max_generation_b != kNoGeneration;
  result.generations = traced;

  // Objects of A matched with one of B, or garbage in A (no later dump can hold those).
  std::vector<uint8_t> claimed_a(a.size(), 0);
  if (options.reachable_a != nullptr) {
    for (ObjectId id = 0; id < a.size(); ++id) claimed_a[id] = !(*options.reachable_a)[id];
  }
  // Objects of A per class not yet matched with an old object of B (only needed with
  // generations, for the objects of B that have none).
  std::unordered_map<uint64_t, int64_t> room_in_a;
  if (traced) {
    for (ObjectId id = 0; id < a.size(); ++id)
      if (!claimed_a[id]) ++room_in_a[sig_a.class_of(id)];
  }
  auto old = [&](ObjectId id) {
    if (traced) --room_in_a[sig_b.class_of(id)];
  };

  // 1. Which objects of B are new.
  std::vector<ObjectId> fresh;
  std::vector<ObjectId> newest;         // of A's newest generation, not at their address in A
  std::vector<ObjectId> no_generation;  // traced dumps: without generation, not held by A
  for (ObjectId id = 0; id < b.size(); ++id) {
    if (options.selection != nullptr && !(*options.selection)(id)) continue;
    const uint32_t g = b.generation[id];
    const ObjectId in_a = a.find(b.address[id]);
    const bool same = in_a != kNoObject && !claimed_a[in_a] && sig_a.of(in_a) == sig_b.of(id) &&
                      a.generation[in_a] == g;
    if (in_a != kNoObject && !same) ++result.address_mismatches;
    if (same) claimed_a[in_a] = 1;
    if (traced && g != kNoGeneration) {
      if (g < a_max || (g == a_max && same)) {
        ++result.old_by_generation;
        old(id);
      } else if (g > a_max) {
        ++result.new_by_generation;
        fresh.push_back(id);
      } else {
        newest.push_back(id);
      }
    } else if (same) {
      old(id);
    } else if (traced) {
      no_generation.push_back(id);
    } else {
      fresh.push_back(id);
    }
  }
  // A's newest generation: old when A holds an unclaimed object of the same class, site and
  // generation (moved since), else new.
  if (!newest.empty()) {
    std::unordered_map<uint64_t, int64_t> unclaimed;
    for (ObjectId id = 0; id < a.size(); ++id) {
      if (!claimed_a[id] && a.generation[id] == a_max) ++unclaimed[sig_a.of(id)];
    }
    for (ObjectId id : newest) {
      if (take(unclaimed, sig_b.of(id))) {
        ++result.old_by_generation;
        old(id);
      } else {
        ++result.new_by_generation;
        fresh.push_back(id);
      }
    }
  }
  // No generation: A's objects of the class that no old object of B accounts for may be them;
  // the others are new.
  std::vector<ObjectId> undecided;
  for (ObjectId id : no_generation) {
    if (take(room_in_a, sig_b.class_of(id))) {
      undecided.push_back(id);
    } else {
      ++result.new_by_class_count;
      fresh.push_back(id);
    }
  }
  // Garbage in B is not alive there: identified above like any object (it may still claim its
  // twin in A), then left out.
  result.garbage_known = options.reachable_b != nullptr;
  if (options.reachable_b != nullptr) {
    auto garbage = [&](ObjectId id) {
      if ((*options.reachable_b)[id]) return false;
      ++result.garbage_count;
      result.garbage_memsize += b.memsize[id];
      return true;
    };
    std::erase_if(fresh, garbage);
    std::erase_if(undecided, garbage);
  }
  // What Memprof.dump_all made itself to write B (its File, its paths, the call caches of its
  // first run): marked in B, memprof's and not the app's.
  auto own = [&](ObjectId id) {
    if ((b.flags[id] & kFlagMemprofOwn) == 0) return false;
    ++result.own_count;
    result.own_memsize += b.memsize[id];
    return true;
  };
  std::erase_if(fresh, own);
  std::erase_if(undecided, own);
  result.undecided_count = undecided.size();
  for (ObjectId id : undecided) result.undecided_memsize += b.memsize[id];
  std::sort(fresh.begin(), fresh.end());
  for (ObjectId id : fresh) {
    ++result.new_count;
    result.new_memsize += b.memsize[id];
  }

  // 2. Which of them are still alive in C.
  std::vector<ObjectId> kept;
  std::vector<ObjectId> undecided_in_c;
  if (c == nullptr) {
    kept = fresh;
  } else {
    result.max_generation_c = max_generation(*c);
    Signatures sig_c(*c);
    // Garbage in C is claimed from the start: nothing survives as it.
    std::vector<uint8_t> claimed_c(c->size(), 0);
    if (options.reachable_c != nullptr) {
      for (ObjectId id = 0; id < c->size(); ++id) claimed_c[id] = !(*options.reachable_c)[id];
    }
    std::vector<ObjectId> missing;  // not at their address in C
    for (ObjectId id : fresh) {
      const ObjectId in_c = c->find(b.address[id]);
      if (in_c != kNoObject && !claimed_c[in_c] && sig_c.of(in_c) == sig_b.of(id) &&
          c->generation[in_c] == b.generation[id]) {
        claimed_c[in_c] = 1;
        kept.push_back(id);
      } else {
        missing.push_back(id);
      }
    }
    if (traced && result.max_generation_c != kNoGeneration) {
      // Moved: an unclaimed object of C with the same class, site and generation.
      std::unordered_map<uint64_t, int64_t> moved;
      // Moved by GC.compact before Ruby 3.4 (allocation info dropped): C's objects of the class
      // without generation, beyond B's own such objects that were not new.
      std::unordered_map<uint64_t, int64_t> without_generation;
      for (ObjectId id = 0; id < c->size(); ++id) {
        if (claimed_c[id]) continue;
        if (c->generation[id] != kNoGeneration) {
          ++moved[with_generation(sig_c.of(id), c->generation[id])];
        } else {
          ++without_generation[sig_c.class_of(id)];
        }
      }
      std::vector<uint8_t> is_fresh(b.size(), 0);
      for (ObjectId id : fresh) is_fresh[id] = 1;
      for (ObjectId id = 0; id < b.size(); ++id) {
        if (!is_fresh[id] && b.generation[id] == kNoGeneration) --without_generation[sig_b.class_of(id)];
      }
      for (ObjectId id : missing) {
        if (b.generation[id] != kNoGeneration && take(moved, with_generation(sig_b.of(id), b.generation[id]))) {
          ++result.kept_by_generation;
          kept.push_back(id);
        } else if (take(without_generation, sig_b.class_of(id))) {
          undecided_in_c.push_back(id);
          result.undecided_in_c_memsize += b.memsize[id];
        }
      }
    }
    std::sort(kept.begin(), kept.end());
    result.undecided_in_c_count = undecided_in_c.size();
  }
  for (ObjectId id : kept) {
    ++result.kept_count;
    result.kept_memsize += b.memsize[id];
  }

  // 3. Rows.
  result.rows = group_rows(b, kept, options.samples, kNoSite);
  result.undecided_rows = group_rows(b, undecided, options.samples, kNoAllocationInfo);
  result.undecided_in_c_rows = group_rows(b, undecided_in_c, options.samples, kNoSite);
  return result;
}

Status check_dump_order(const Heap& earlier, std::string_view earlier_name, const Heap& later,
                        std::string_view later_name) {
  // Ruby never moves heap pages: a later dump of the same process keeps objects in pages the
  // earlier one had (its oldest objects at least). Regions of 64 KiB cover a page on every
  // Ruby version. First: generations of two processes say nothing of an order.
  std::unordered_set<uint64_t> pages;
  for (uint64_t address : earlier.address) pages.insert(address >> 16);
  const bool share_a_page = std::any_of(later.address.begin(), later.address.end(),
                                        [&](uint64_t address) { return pages.count(address >> 16) != 0; });
  if (!share_a_page) {
    return err("{} and {} share no heap page: they come from different processes (or one "
               "restarted in between)", earlier_name, later_name);
  }
  const uint32_t earlier_max = max_generation(earlier), later_max = max_generation(later);
  if (earlier_max != kNoGeneration && later_max != kNoGeneration && later_max < earlier_max) {
    return err("{} cannot have been taken after {}: its newest allocation generation ({}) is older "
               "than that of {} ({}); give the dumps in the order they were taken",
               later_name, earlier_name, later_max, earlier_name, earlier_max);
  }
  return ok_status();
}

}  // namespace memprof::heap
