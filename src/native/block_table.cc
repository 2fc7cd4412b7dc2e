#include "native/block_table.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>

namespace memprof::native {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kSlotsPerPage = kPage / 16;
constexpr size_t kMinCapacity = kSlotsPerPage;  // one page per stripe to begin with

// Fibonacci hashing of the address without its alignment bits: neighbouring blocks spread over
// stripes (top 6 bits) and slots (the next bits).
uint64_t hash_of(uintptr_t address) { return (address >> 4) * 0x9E3779B97F4A7C15ull; }
size_t stripe_of(uint64_t hash) { return hash >> 58; }
size_t home_of(uint64_t hash, size_t capacity) {
  return static_cast<size_t>((static_cast<unsigned __int128>(hash << 6) * capacity) >> 64);
}

size_t round_to_page(size_t slots) { return (slots + kSlotsPerPage - 1) / kSlotsPerPage * kSlotsPerPage; }

}  // namespace

BlockTable::Slot* BlockTable::find(const Stripe& stripe, uint64_t hash, uintptr_t address) noexcept {
  if (stripe.capacity == 0) return nullptr;
  for (size_t i = home_of(hash, stripe.capacity);; i = i + 1 == stripe.capacity ? 0 : i + 1) {
    Slot& slot = stripe.slots[i];
    if (slot.address == address) return &slot;
    if (slot.address == 0) return nullptr;
  }
}

// Rehashes the stripe into a fresh mapping of `capacity` slots. False (stripe unchanged) when
// the mapping cannot be made.
bool BlockTable::resize(Stripe& stripe, size_t capacity) noexcept {
  int saved_errno = errno;
  size_t bytes = capacity * sizeof(Slot);
  // Populated at once: the rehash writes all over the new table, and one fault per page costs
  // several microseconds on the VMs we measure (1M inserts into an empty table: 0.40 -> 0.27 us each).
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (memory == MAP_FAILED) {
    errno = saved_errno;
    return false;
  }
  ScopedMmap mapping(memory, bytes);
  auto* slots = static_cast<Slot*>(memory);
  for (size_t i = 0; i < stripe.capacity; ++i) {
    const Slot& old = stripe.slots[i];
    if (old.address == 0) continue;
    size_t j = home_of(hash_of(old.address), capacity);
    while (slots[j].address != 0) j = j + 1 == capacity ? 0 : j + 1;
    slots[j] = old;
  }
  stripe.mapping = std::move(mapping);  // unmaps the old table
  stripe.slots = slots;
  __atomic_store_n(&stripe.capacity, capacity, __ATOMIC_RELAXED);  // read unlocked by mapped_bytes()
  errno = saved_errno;
  return true;
}

InsertOutcome BlockTable::insert(uintptr_t address, uint64_t size, uint32_t site,
                                 BlockRecord* replaced) noexcept {
  if (size > kMaxBlockSize || site > kMaxSiteId) return InsertOutcome::kDropped;
  const uint64_t hash = hash_of(address);
  Stripe& stripe = stripes_[stripe_of(hash)];
  const uint64_t packed = size << 24 | site;
  SpinGuard guard(stripe.lock);
  if (Slot* slot = find(stripe, hash, address)) {
    replaced->size = slot->packed >> 24;
    replaced->site = static_cast<uint32_t>(slot->packed & kMaxSiteId);
    slot->packed = packed;
    return InsertOutcome::kReplaced;
  }
  if ((stripe.count + 1) * 5 > stripe.capacity * 4) {
    size_t grown = stripe.capacity == 0 ? kMinCapacity : round_to_page(stripe.capacity * 3 / 2);
    // Without a bigger table keep going while one slot stays empty (probes must end).
    if (!resize(stripe, grown) && stripe.count + 2 > stripe.capacity) return InsertOutcome::kDropped;
  }
  size_t i = home_of(hash, stripe.capacity);
  while (stripe.slots[i].address != 0) i = i + 1 == stripe.capacity ? 0 : i + 1;
  stripe.slots[i] = {address, packed};
  __atomic_store_n(&stripe.count, stripe.count + 1, __ATOMIC_RELAXED);
  return InsertOutcome::kInserted;
}

bool BlockTable::take(uintptr_t address, BlockRecord* record) noexcept {
  const uint64_t hash = hash_of(address);
  Stripe& stripe = stripes_[stripe_of(hash)];
  SpinGuard guard(stripe.lock);
  Slot* found = find(stripe, hash, address);
  if (found == nullptr) return false;
  record->size = found->packed >> 24;
  record->site = static_cast<uint32_t>(found->packed & kMaxSiteId);
  // Backward-shift deletion: pull later entries of the probe run into the hole when their home
  // is not between the hole and them (cyclically).
  const size_t capacity = stripe.capacity;
  size_t hole = static_cast<size_t>(found - stripe.slots);
  for (size_t j = hole;;) {
    j = j + 1 == capacity ? 0 : j + 1;
    Slot& next = stripe.slots[j];
    if (next.address == 0) break;
    size_t home = home_of(hash_of(next.address), capacity);
    bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    stripe.slots[hole] = next;
    hole = j;
  }
  stripe.slots[hole] = {0, 0};
  __atomic_store_n(&stripe.count, stripe.count - 1, __ATOMIC_RELAXED);
  if (capacity > kMinCapacity && stripe.count * 5 < capacity)
    (void)resize(stripe, round_to_page(stripe.count * 2 > kMinCapacity ? stripe.count * 2 : kMinCapacity));
  return true;
}

void BlockTable::lock_all() noexcept {
  for (Stripe& stripe : stripes_) stripe.lock.lock();
}

void BlockTable::unlock_all() noexcept {
  for (Stripe& stripe : stripes_) stripe.lock.unlock();
}

size_t BlockTable::entries() const noexcept {
  size_t total = 0;
  for (const Stripe& stripe : stripes_) total += __atomic_load_n(&stripe.count, __ATOMIC_RELAXED);
  return total;
}

size_t BlockTable::mapped_bytes() const noexcept {
  size_t total = 0;
  for (const Stripe& stripe : stripes_) total += __atomic_load_n(&stripe.capacity, __ATOMIC_RELAXED) * sizeof(Slot);
  return total;
}

}  // namespace memprof::native
