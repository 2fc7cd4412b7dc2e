// What the tracker needs to know about Ractors (Ruby 3.0+), and the lock that keeps its tables
// whole while several of them allocate at the same time.
//
// Each Ractor runs under its own lock, not under one GVL, so a second Ractor means allocation
// hooks running in parallel. Ruby's own "single Ractor" flag is not exported by every version,
// so memprof keeps its own, set by note_ractor_start(): when tracking starts while Ractors
// run, and when the tracker records the allocation of a Ractor object -- Ractor.new allocates
// it on the creating thread before the new Ractor's thread exists, so no record straddles
// the switch. Until then, and in every program that never starts a Ractor, the lock costs one
// load and one branch.
//
// Whoever holds the lock must not call into Ruby: a GC stops every Ractor at a safe point, and
// a Ractor waiting for this lock is not at one.
//
// Walking the heap (rb_objspace_each_objects) is not safe while another Ractor allocates: it
// sizes a buffer by the page count and then follows the page list, which another Ractor may
// be growing. So the tracker walks only while the main Ractor is the only one alive.
#pragma once

#include <pthread.h>

#include "ruby/ruby_headers.h"
#if RUBY_API_VERSION_MAJOR >= 3
#include <ruby/ractor.h>
#endif

namespace memprof::ruby {

// True from the first Ractor.new on (Ruby itself never goes back to single-Ractor mode).
bool several_ractors() noexcept;
void note_ractor_start() noexcept;

// Ractors alive now, the main one included (Ractor.count). Calls Ruby: main Ractor only,
// outside the RactorLock.
long living_ractors();

// Whether `object`, a T_DATA, is a Ractor (only reads its class pointer).
inline bool is_ractor(VALUE object) noexcept {
#if RUBY_API_VERSION_MAJOR >= 3
  return reinterpret_cast<const struct RBasic*>(object)->klass == rb_cRactor;
#else
  (void)object;
  return false;
#endif
}

// True when the main Ractor is alone (so the heap may be walked), after waiting up to
// `patience_ms` for Ractors that have delivered their result but not ended yet.
bool main_ractor_alone(int patience_ms);

class RactorLock {
 public:
  RactorLock() = default;
  RactorLock(const RactorLock&) = delete;
  RactorLock& operator=(const RactorLock&) = delete;

  // In the child of a fork: only the forking thread exists there, so a lock another Ractor's
  // thread held at fork time would never be released.
  void reinitialize_after_fork() noexcept { mutex_ = PTHREAD_MUTEX_INITIALIZER; }

  // Holds the lock for a scope when several Ractors exist; does nothing otherwise.
  class Scope {
   public:
    explicit Scope(RactorLock& lock) noexcept
        : mutex_(several_ractors() ? &lock.mutex_ : nullptr) {
      if (mutex_ != nullptr) pthread_mutex_lock(mutex_);
    }
    ~Scope() {
      if (mutex_ != nullptr) pthread_mutex_unlock(mutex_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    pthread_mutex_t* mutex_;
  };

 private:
  pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
};

}  // namespace memprof::ruby
