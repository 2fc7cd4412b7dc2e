#include "tracer/trace_session.h"

#include <elf.h>
#include <fnmatch.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/hook/hook_change.h"
#include "core/hook/loaded_object.h"
#include "core/util/path_name.h"
#include "core/util/thread_exists.h"
#include "tracer/process_hooks.h"
#include "tracer/trampoline.h"

namespace memprof::tracer {
namespace {

// Functions of one object that are traced only through the GOT, or not at all, each with why:
// said one line each when they are few (or with `verbose`), else one line per kind that names
// them (`trace -x 'rb_*'` came with 105 lines of reasons ahead of the trace itself).
class ObjectProblems {
 public:
  void got_only(const std::string& name, std::string why) { got_only_.push_back({name, std::move(why)}); }
  void untraceable(const std::string& name, std::string why) { untraceable_.push_back({name, std::move(why)}); }

  // The untraceable functions' names, so that a pattern that matched only them is not also
  // said to match nothing.
  void say(const std::string& object, bool verbose, std::vector<std::string>& problems,
           std::vector<std::string>& untraceable_names) const {
    for (const auto& [name, why] : untraceable_) untraceable_names.push_back(name);
    if (verbose || got_only_.size() <= kOneLineEach) {
      for (const auto& [name, why] : got_only_)
        problems.push_back(fmt::format("{} in {}: its entry cannot be patched ({}); only calls through the GOT are seen",
                                       name, object, why));
    } else {
      problems.push_back(fmt::format("{}: {} functions are traced only through the GOT (their entries cannot be "
                                     "patched; calls from inside the object are not seen): {} (-v: why, for each)",
                                     object, got_only_.size(), names(got_only_)));
    }
    if (verbose || untraceable_.size() <= kOneLineEach) {
      for (const auto& [name, why] : untraceable_)
        problems.push_back(fmt::format("cannot trace {} in {}: {}", name, object, why));
    } else {
      problems.push_back(fmt::format("{}: {} functions cannot be traced: {} (-v: why, for each)", object,
                                     untraceable_.size(), names(untraceable_)));
    }
  }

 private:
  static constexpr size_t kOneLineEach = 3;
  static constexpr size_t kNamed = 6;
  using Named = std::vector<std::pair<std::string, std::string>>;

  // The first kNamed in alphabetical order.
  static std::string names(const Named& list) {
    std::vector<std::string_view> sorted;
    for (const auto& named : list) sorted.push_back(named.first);
    std::sort(sorted.begin(), sorted.end());
    std::string out;
    for (size_t i = 0; i < std::min(sorted.size(), kNamed); ++i) out += fmt::format("{}{}", i ? ", " : "", sorted[i]);
    if (sorted.size() > kNamed) out += fmt::format(" and {} more", sorted.size() - kNamed);
    return out;
  }

  Named got_only_, untraceable_;
};

bool traceable_object(const hook::LoadedObject& object, const TraceRequest& request) {
  if (!object.problem.empty()) return false;
  if (object.role == hook::ObjectRole::kLoader || object.role == hook::ObjectRole::kVdso ||
      object.role == hook::ObjectRole::kHookLibrary)
    return false;
  return request.libraries.empty() || matches_any(request.libraries, std::string(file_name_of(object.path)));
}

// The functions `object` defines whose names match, one per address (aliases share one: the
// name a pattern spells out wins, then one without a leading underscore).
std::vector<Candidate> matching_functions(const hook::LoadedObject& object, const std::vector<SymbolFilter>& filters) {
  std::vector<Candidate> found;
  const DefiningObject defining{object.path.c_str(), file_name_of(object.path).data(),
                                object.role == hook::ObjectRole::kProgram};
  for (uint32_t index = 1; index < object.tables.symbol_count; ++index) {
    const Elf64_Sym& symbol = object.tables.symtab[index];
    unsigned type = ELF64_ST_TYPE(symbol.st_info);
    if (symbol.st_shndx == SHN_UNDEF || symbol.st_value == 0 ||
        ELF64_ST_BIND(symbol.st_info) == STB_LOCAL || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
        object.version_hidden(index))
      continue;
    std::string name(object.symbol_name(index));
    if (name.empty() || !selects_any(filters, name, defining)) continue;
    uintptr_t address = object.bias + symbol.st_value;
    // What the loader does with an IFUNC on x86-64: call its resolver with no arguments.
    if (type == STT_GNU_IFUNC) address = reinterpret_cast<uintptr_t (*)()>(address)();
    auto same = std::find_if(found.begin(), found.end(), [&](const Candidate& c) { return c.address == address; });
    if (same == found.end()) {
      found.push_back({std::move(name), address, type == STT_GNU_IFUNC});
      continue;
    }
    auto rank = [&](const std::string& n) {
      bool spelled = std::any_of(filters.begin(), filters.end(), [&](const SymbolFilter& f) { return f.spells(n); });
      return (spelled ? 0 : 2) + (n[0] == '_' ? 1 : 0);
    };
    if (rank(name) < rank(same->name)) same->name = std::move(name);
  }
  return found;
}

// Whether a seccomp filter runs in this process (Seccomp: 2 in /proc/self/status).
bool under_seccomp_filter() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return false;
  char line[256];
  bool filtered = false;
  while (std::fgets(line, sizeof(line), status) != nullptr)
    if (std::strncmp(line, "Seccomp:", 8) == 0) filtered = std::strtol(line + 8, nullptr, 10) == 2;
  std::fclose(status);
  return filtered;
}

}  // namespace

std::string malformed_glob(std::string_view glob) {
  for (size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      ++i;  // an escaped character
    } else if (glob[i] == '[') {
      size_t first = i + 1;
      if (first < glob.size() && (glob[first] == '!' || glob[first] == '^')) ++first;
      if (first < glob.size() && glob[first] == ']') ++first;  // "[]...]": a literal ']' first
      const size_t close = glob.find(']', first);
      if (close == std::string_view::npos) {
        return "a '[' that no ']' closes (write \\[ for a bracket itself)";
      }
      i = close;
    }
  }
  return "";
}

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& glob) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; });
}

Result<std::unique_ptr<TraceSession>> TraceSession::start(TraceRequest request) {
  if (request.patterns.empty()) return err("no function to trace");
  std::vector<std::string> problems;
  // Copying an argument is a process_vm_readv, which a filter may answer by killing the process.
  if (!request.captures.empty() && under_seccomp_filter()) {
    request.captures.clear();
    problems.push_back("the process runs under a seccomp filter: strings and pointed-to values are not copied "
                       "(shown as addresses)");
  }
  std::erase_if(request.patterns, is_event_pattern);  // the agent's business (add_event_source)
  std::vector<SymbolFilter> filters;
  for (const std::string& pattern : request.patterns) {
    auto filter = SymbolFilter::parse(pattern);
    if (!filter.ok()) return err("-x '{}': {}", pattern, filter.message());
    filters.push_back(std::move(*filter));
  }
  std::unique_ptr<TraceSession> session(new TraceSession(std::move(request), std::move(filters)));
  // Before the watch: a library loaded from here on adds its problems to these.
  session->pending_problems_ = std::move(problems);
  Untraced untraced;
  hook::HookChange change;
  MEMPROF_TRY_STATUS(watch_process_for(session.get()));
  set_recording(session->request_.records);
  start_tracing_here();
  session->clock_.calibrate();
  session->start_ticks_ = now_ticks();
  // What earlier sessions left in the rings is not this trace's.
  for (uint32_t i = 0; i < thread_state_count(); ++i)
    if (ThreadTrace* state = thread_state(i)) state->ring.drain([](const trace::CallRecord&) {});
  std::lock_guard lock(session->mutex_);
  // Functions traced before keep their counters, and rings their drops: this trace counts from here.
  session->baseline_ = session->sum_counters(function_count());
  session->lost_at_start_ = lost_calls();
  session->hook_objects_locked(session->initial_);
  return session;
}

TraceSession::~TraceSession() {
  Untraced untraced;
  hook::HookChange change;
  if (hook::hooks_frozen()) return;  // its hooks pass calls through for good (hook_change.h)
  stop_watching_for(this);  // first: a dlopen meanwhile must not hook more for this session
  {
    std::lock_guard lock(mutex_);
    hook::EntryHook::uninstall_all(entry_hooks_);
    got_hooks_.clear();
  }
  release_unwinder_hooks_if_idle();  // last: no call can start any more
}

Result<uint32_t> TraceSession::add_event_source(const char* name) {
  MEMPROF_TRY(id, event_source(name));
  hook::HookChange change;  // mutex_ must not be copied held into a fork (hook_change.h)
  std::lock_guard lock(mutex_);
  ids_.push_back(id);
  initial_.push_back({id, name, "", 0, false});
  return id;
}

void TraceSession::hook_new_objects() {
  hook::HookChange change;
  std::lock_guard lock(mutex_);
  hook_objects_locked(pending_functions_);
}

// One thread's dlclose unloads an object and another's dlopen loads it again, at the same
// address, before the first one's watch forgot it: it looks seen, and its calls went untraced
// (4 threads loading, calling and unloading one library lost 500-1,500 calls of 200,000). Its
// code is then the file's again: a hook of it finds the bytes its jump had replaced. One pass
// over the hooks, one look per hooked object: this runs at every dlopen. Only objects in the
// `loaded` snapshot are looked at: an unloaded one's pages may be gone.
std::vector<hook::ObjectKey> TraceSession::reloaded_objects_locked(const std::vector<hook::LoadedObject>& loaded) const {
  std::vector<hook::ObjectKey> looked_at, reloaded;
  for (const auto& hook : entry_hooks_) {
    const hook::ObjectKey& key = hook->object_key();
    if (key.dynamic == nullptr || std::find(looked_at.begin(), looked_at.end(), key) != looked_at.end()) continue;
    looked_at.push_back(key);
    if (!hook::is_loaded(loaded, key)) continue;
    if (std::memcmp(hook->target(), hook->saved_bytes().data(), hook->saved_bytes().size()) == 0)
      reloaded.push_back(key);
  }
  return reloaded;
}

void TraceSession::forget_unloaded_objects() {
  hook::HookChange change;
  std::lock_guard lock(mutex_);
  auto objects = hook::loaded_objects();
  if (!objects.ok()) return;  // forgets nothing: an object loaded again is then not traced
  auto unloaded = [&](const hook::ObjectKey& key) { return !hook::is_loaded(*objects, key); };
  std::erase_if(seen_objects_, unloaded);
  // Their bytes went with the object (the destructors leave unloaded objects alone); the
  // registry of hooked entries would refuse the next load's entries while they exist.
  std::erase_if(entry_hooks_, [&](const auto& hook) {
    return hook->object_key().dynamic != nullptr && unloaded(hook->object_key());
  });
}

// The entry points the kernel starts the program and its interpreter at (_start): not called,
// so where a return address would be is argc. The ruby executable exports its _start, and
// `trace -x '*' -- ruby ...`, held before it, hooked it and died at once (SIGSEGV).
bool entry_point(uintptr_t address) {
  if (address == ::getauxval(AT_ENTRY)) return true;
  const uintptr_t interpreter = ::getauxval(AT_BASE);
  return interpreter != 0 && address == interpreter + reinterpret_cast<const Elf64_Ehdr*>(interpreter)->e_entry;
}

// Why a function must not be traced at all, or nothing. vfork's child runs in the parent's
// memory, on its stack and with its thread state, until it execs or exits: it took the traced
// return the parent was to take, and the parent then returned to nowhere (SIGSEGV; Python's
// subprocess uses vfork, so `-x '*' -l 'libc.so*'` killed every Python that ran a command).
const char* never_traced(const std::string& name, uintptr_t address) {
  if (name == "vfork" || name == "__vfork")
    return "its child runs on the caller's stack and thread state until it execs: the traced return "
           "would be taken twice";
  if (entry_point(address)) return "the program's entry point, which is not called: it has no return address";
  return nullptr;
}

void TraceSession::hook_objects_locked(std::vector<HookedFunction>& added) {
  auto objects = hook::loaded_objects();
  if (!objects.ok()) {
    pending_problems_.push_back("reading the loaded objects: " + objects.message());
    return;
  }
  size_t beyond_the_table = 0;  // matched once kMaxFunctions were traced: one line, not one each
  const std::vector<hook::ObjectKey> reloaded = reloaded_objects_locked(*objects);
  for (const hook::LoadedObject& object : *objects) {
    if (std::find(seen_objects_.begin(), seen_objects_.end(), object.key()) == seen_objects_.end()) {
      seen_objects_.push_back(object.key());
    } else if (std::find(reloaded.begin(), reloaded.end(), object.key()) != reloaded.end()) {
      // The old load's hooks went with it (their bytes are the new load's own again).
      std::erase_if(entry_hooks_, [&](const auto& hook) { return hook->object_key() == object.key(); });
    } else {
      continue;
    }
    if (!traceable_object(object, request_)) continue;
    ObjectProblems object_problems;
    // The object's functions are hooked together: one parking of the process's threads for all.
    std::vector<Candidate> candidates;
    std::vector<TracedFunction*> functions;
    for (Candidate& candidate : matching_functions(object, filters_)) {
      if (const char* why = never_traced(candidate.name, candidate.address)) {
        object_problems.untraceable(candidate.name, why);
        continue;
      }
      auto function = traced_function(candidate.address);
      if (!function.ok() && traced_function_table_full()) {
        ++beyond_the_table;
        continue;
      }
      if (!function.ok()) {
        object_problems.untraceable(candidate.name, function.message());
        continue;
      }
      TracedFunction& traced = **function;
      if (auto capture = request_.captures.find(candidate.name); capture != request_.captures.end())
        traced.capture = capture->second;
      else
        traced.capture = {};
      candidates.push_back(std::move(candidate));
      functions.push_back(&traced);
    }
    auto refusals = hook_functions(candidates, functions);
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& candidate = candidates[i];
      TracedFunction& traced = *functions[i];
      auto& entry_refusal = refusals[i];
      if (!entry_refusal.ok()) {
        object_problems.untraceable(candidate.name, entry_refusal.message());
        continue;
      }
      const bool through_got = entry_refusal->has_value();
      if (through_got) object_problems.got_only(candidate.name, std::move(**entry_refusal));
      // An object loaded again at the same address: its functions are the ones traced already.
      if (std::find(ids_.begin(), ids_.end(), traced.id) != ids_.end()) continue;
      ids_.push_back(traced.id);
      added.push_back({traced.id, candidate.name, object.path, candidate.address, through_got});
    }
    // A library loaded again (a load-call-unload loop) has the problems it had: said once.
    if (objects_with_problems_said_.insert(object.path).second)
      object_problems.say(object.path, request_.verbose, pending_problems_, pending_untraceable_);
  }
  if (beyond_the_table > 0)
    pending_problems_.push_back(fmt::format("{} more matching function{} not traced: at most {} are (name fewer, "
                                            "or pick objects with -l)",
                                            beyond_the_table, beyond_the_table == 1 ? " is" : "s are", kMaxFunctions));
}

std::vector<Result<std::optional<std::string>>> TraceSession::hook_functions(
    const std::vector<Candidate>& candidates, const std::vector<TracedFunction*>& functions) {
  // Parked: a thread of the target may be inside the bytes a jump replaces.
  std::vector<hook::EntryHookRequest> requests;
  std::vector<size_t> requested;
  std::vector<std::string> refusals(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].ifunc) {
      refusals[i] = "an IFUNC implementation, which other functions may jump into";
      continue;
    }
    requests.push_back({reinterpret_cast<void*>(candidates[i].address), functions[i]->stub, &functions[i]->original});
    requested.push_back(i);
  }
  auto installed = hook::EntryHook::install_many(requests, {.park_threads = true, .owner = "a memprof trace"});
  std::vector<Result<std::optional<std::string>>> results(candidates.size(), std::optional<std::string>());
  for (size_t k = 0; k < installed.size(); ++k) {
    if (installed[k].ok()) {
      entry_hooks_.push_back(std::move(*installed[k]));
    } else {
      refusals[requested[k]] = installed[k].message();
    }
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (refusals[i].empty()) continue;
    // The entry is not patched: calls from other objects through their GOT still can be seen.
    auto got = hook::GotHook::install(candidates[i].name, functions[i]->stub,
                                      {.follow_dlopen = false, .publish_original = &functions[i]->original});
    if (!got.ok()) {
      results[i] = err("{}; {}", refusals[i], got.message());
      continue;
    }
    got_hooks_.push_back(std::move(*got));
    results[i] = std::optional<std::string>(refusals[i]);
  }
  return results;
}

TraceReadout TraceSession::read(size_t max_records) {
  Untraced untraced;
  TraceReadout out;
  {
    hook::HookChange change;
    std::lock_guard lock(mutex_);
    out.new_functions = std::move(pending_functions_);
    pending_functions_.clear();
    out.problems = std::move(pending_problems_);
    pending_problems_.clear();
    out.untraceable = std::move(pending_untraceable_);
    pending_untraceable_.clear();
  }
  for (uint32_t i = 0; i < thread_state_count(); ++i) {
    ThreadTrace* state = thread_state(i);
    if (state == nullptr) continue;
    bool exited = state->owned.load(std::memory_order_acquire) == 1 && !state->ignored &&
                  !thread_exists(state->tid);
    size_t room = max_records - std::min(max_records, out.records.size());
    state->ring.drain([&](const trace::CallRecord& record) { out.records.push_back(record); }, room);
    // A thread that exited (inside a traced call or not) gives its state back once drained.
    if (exited && out.records.size() < max_records) state->owned.store(0, std::memory_order_release);
  }
  LostCalls lost = lost_calls();
  out.dropped = lost.dropped - lost_at_start_.dropped;
  out.untraced = lost.untraced - lost_at_start_.untraced;
  clock_.refine();
  for (trace::CallRecord& record : out.records) {
    record.entry_ns = clock_.to_monotonic_ns(record.entry_ns);
    record.duration_ns = clock_.to_ns(record.duration_ns);
  }
  return out;
}

std::vector<trace::CallRecord> TraceSession::unfinished_calls() const {
  std::vector<trace::CallRecord> calls;
  if (!request_.records) return calls;  // -c: counts only
  for (uint32_t i = 0; i < thread_state_count(); ++i) {
    const ThreadTrace* state = thread_state(i);
    if (state == nullptr || state->owned.load(std::memory_order_acquire) == 0 || state->ignored) continue;
    // The thread runs on: its stack is read twice and kept only when both reads agree, the
    // thread outside the tracer both times (a call entered or left meanwhile changes them).
    auto read = [&](std::vector<trace::CallRecord>& out) {
      const uint32_t depth = std::min<uint32_t>(__atomic_load_n(&state->depth, __ATOMIC_ACQUIRE), kMaxDepth);
      out.resize(depth);
      for (uint32_t k = 0; k < depth; ++k) std::memcpy(&out[k], &state->stack[k].record, sizeof(trace::CallRecord));
      return !__atomic_load_n(&state->busy, __ATOMIC_ACQUIRE) && __atomic_load_n(&state->depth, __ATOMIC_ACQUIRE) == depth;
    };
    std::vector<trace::CallRecord> first, second;
    if (!read(first) || !read(second) || first.size() != second.size() ||
        std::memcmp(first.data(), second.data(), first.size() * sizeof(trace::CallRecord)) != 0)
      continue;
    for (trace::CallRecord& call : first) {
      if (call.entry_ns < start_ticks_) continue;
      call.outcome = trace::CallOutcome::kUnfinished;
      call.duration_ns = 0;
      call.returned = {};
      call.entry_ns = clock_.to_monotonic_ns(call.entry_ns);
      calls.push_back(call);
    }
  }
  return calls;
}

TraceSession::LostCalls TraceSession::lost_calls() {
  LostCalls lost{0, calls_without_state()};
  for (uint32_t i = 0; i < thread_state_count(); ++i)
    if (ThreadTrace* state = thread_state(i)) {
      lost.dropped += state->ring.dropped();
      lost.untraced += __atomic_load_n(&state->untimed, __ATOMIC_RELAXED);
    }
  return lost;
}

std::vector<FunctionCounters> TraceSession::sum_counters(uint32_t functions) const {
  std::vector<FunctionCounters> sums(functions);
  for (uint32_t i = 0; i < thread_state_count(); ++i) {
    ThreadTrace* state = thread_state(i);
    if (state == nullptr) continue;
    for (uint32_t id = 0; id < functions; ++id) {
      sums[id].calls += __atomic_load_n(&state->counters[id].calls, __ATOMIC_RELAXED);
      sums[id].ticks += __atomic_load_n(&state->counters[id].ticks, __ATOMIC_RELAXED);
    }
  }
  return sums;
}

std::vector<FunctionTotals> TraceSession::totals() const {
  hook::HookChange change;
  std::lock_guard lock(mutex_);
  std::vector<FunctionCounters> sums = sum_counters(function_count());
  std::vector<FunctionTotals> out;
  for (uint32_t id : ids_) {
    FunctionCounters base = id < baseline_.size() ? baseline_[id] : FunctionCounters{};
    out.push_back({id, sums[id].calls - base.calls, clock_.to_ns(sums[id].ticks - base.ticks)});
  }
  return out;
}

}  // namespace memprof::tracer
