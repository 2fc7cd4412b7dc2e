#include "tracer/trampoline.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

#include "core/hook/near_memory.h"
#include "core/hook/x86_64/code_writer.h"
#include "core/util/raw_syscall.h"
#include "trace/safe_read.h"
#include "tracer/tick_clock.h"

// The two entry points, written in assembly because they run between a caller and its callee
// and must leave every argument and return register as they found it.
//
// trace_entry, reached from a function's stub with r11 = its TracedFunction*. On entry rsp
// points at the return address. Frame: xmm0-7 at [rsp, rsp+128), then rdi, rsi, rdx, rcx, r8,
// r9, rax (the vector-argument count of varargs calls), r10 (a static chain).
//
// trace_exit, reached by the traced function's `ret`, so rsp is one slot above the old return
// address. It steps back onto that slot, saves rax, rdx, xmm0 and xmm1, and lets on_exit write
// the real return address into the slot, then `ret`s through it.
//
// Both align the stack themselves (rbp keeps where it was): the ABI puts rsp at 8 mod 16 at a
// function's entry, but hand-written code may call a function on any 8-byte boundary, and a
// function that does not touch the stack runs fine so; the movdqa here would then fault.
asm(R"(
  .text
  .globl memprof_trace_entry
  .hidden memprof_trace_entry
  .type memprof_trace_entry, @function
memprof_trace_entry:
  push %rbp
  mov %rsp, %rbp
  and $-16, %rsp
  sub $192, %rsp
  movdqa %xmm0, 0(%rsp)
  movdqa %xmm1, 16(%rsp)
  movdqa %xmm2, 32(%rsp)
  movdqa %xmm3, 48(%rsp)
  movdqa %xmm4, 64(%rsp)
  movdqa %xmm5, 80(%rsp)
  movdqa %xmm6, 96(%rsp)
  movdqa %xmm7, 112(%rsp)
  mov %rdi, 128(%rsp)
  mov %rsi, 136(%rsp)
  mov %rdx, 144(%rsp)
  mov %rcx, 152(%rsp)
  mov %r8, 160(%rsp)
  mov %r9, 168(%rsp)
  mov %rax, 176(%rsp)
  mov %r10, 184(%rsp)
  mov %r11, %rdi
  mov %rsp, %rsi
  lea 8(%rbp), %rdx
  call memprof_trace_on_entry
  mov %rax, %r11
  movdqa 0(%rsp), %xmm0
  movdqa 16(%rsp), %xmm1
  movdqa 32(%rsp), %xmm2
  movdqa 48(%rsp), %xmm3
  movdqa 64(%rsp), %xmm4
  movdqa 80(%rsp), %xmm5
  movdqa 96(%rsp), %xmm6
  movdqa 112(%rsp), %xmm7
  mov 128(%rsp), %rdi
  mov 136(%rsp), %rsi
  mov 144(%rsp), %rdx
  mov 152(%rsp), %rcx
  mov 160(%rsp), %r8
  mov 168(%rsp), %r9
  mov 176(%rsp), %rax
  mov 184(%rsp), %r10
  leave
  jmp *%r11
  .size memprof_trace_entry, .-memprof_trace_entry

  .globl memprof_trace_exit
  .hidden memprof_trace_exit
  .type memprof_trace_exit, @function
memprof_trace_exit:
  sub $8, %rsp
  push %rbp
  mov %rsp, %rbp
  and $-16, %rsp
  sub $48, %rsp
  movdqa %xmm0, 0(%rsp)
  movdqa %xmm1, 16(%rsp)
  mov %rdx, 32(%rsp)
  mov %rax, 40(%rsp)
  mov %rsp, %rdi
  lea 8(%rbp), %rsi
  call memprof_trace_on_exit
  mov %rax, 8(%rbp)
  movdqa 0(%rsp), %xmm0
  movdqa 16(%rsp), %xmm1
  mov 32(%rsp), %rdx
  mov 40(%rsp), %rax
  leave
  ret
  .size memprof_trace_exit, .-memprof_trace_exit
)");

namespace memprof::tracer {

// Register frames as the assembly above lays them out.
struct EntryRegisters {
  uint64_t vector[8][2];
  uint64_t integer[6];  // rdi, rsi, rdx, rcx, r8, r9
  uint64_t rax;
  uint64_t r10;
};
static_assert(sizeof(EntryRegisters) == 192);

struct ExitRegisters {
  uint64_t xmm0[2];
  uint64_t xmm1[2];
  uint64_t rdx;
  uint64_t rax;
};
static_assert(sizeof(ExitRegisters) == 48);

// The two handlers are called only from the stubs' assembly above: `used` keeps them when
// link-time optimization sees no caller in C++.
extern "C" {
void memprof_trace_entry();
void memprof_trace_exit();
[[gnu::used]] uintptr_t memprof_trace_on_entry(TracedFunction* function, EntryRegisters* registers, uint64_t* slot);
[[gnu::used]] uint64_t memprof_trace_on_exit(ExitRegisters* registers, uint64_t* slot);
}

namespace {

constexpr int kTraceStubKind = 3;  // near_memory's TrampolineKey kinds: 1 entry, 2 call site

// The function table: fixed slots so that ids and addresses never move.
TracedFunction g_functions[kMaxFunctions];
std::atomic<uint32_t> g_function_count{0};
std::mutex g_functions_mutex;  // makes new functions (never taken inside a hook)

std::atomic<ThreadTrace*> g_states[kMaxThreads];
std::atomic<uint32_t> g_state_count{0};
std::atomic<uint64_t> g_calls_without_state{0};
std::atomic<bool> g_recording{true};
std::atomic<CallerSource> g_caller_source{nullptr};
std::atomic<bool> g_passing_through{false};  // a forked child: no new call is traced

// Initial-exec: a plain %fs-relative load, no __tls_get_addr (which may call malloc).
thread_local ThreadTrace* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
// Set by ignore_this_thread, read when the thread claims its state: an ignored thread (the
// agent's) gets one only if it ever makes a traced call -- not a 4 MB mapping and 51 KB written
// at every agent start, each forked child's included.
thread_local bool t_ignored __attribute__((tls_model("initial-exec"))) = false;

uint64_t exit_stub() { return reinterpret_cast<uint64_t>(&memprof_trace_exit); }

ThreadTrace* adopt(ThreadTrace* state) {
  state->tid = static_cast<uint32_t>(raw_syscall(SYS_gettid));
  state->busy = false;
  state->ignored = t_ignored;
  state->depth = 0;
  state->abandoned_next = 0;
  for (AbandonedCall& call : state->abandoned) call = {};
  t_state = state;
  return state;
}

// This thread's state: a free one left by an exited thread, else a new mapping. Called on a
// thread's first traced call, from inside the hook, before its busy flag exists: no libc call
// (raw_syscall), never malloc -- mmap, syscall or __errno_location may be traced functions
// (tracing __errno_location overflowed the stack; tracing mmap mapped 510 states of 3 MB).
ThreadTrace* claim_state() {
  uint32_t count = g_state_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < count; ++i) {
    ThreadTrace* state = g_states[i].load(std::memory_order_acquire);
    uint32_t free_state = 0;
    if (state != nullptr && state->owned.compare_exchange_strong(free_state, 1)) return adopt(state);
  }
  uint32_t index = g_state_count.fetch_add(1);
  if (index >= kMaxThreads) {
    g_state_count.fetch_sub(1);
    return nullptr;
  }
  const long mapped = raw_syscall(SYS_mmap, 0, static_cast<long>(sizeof(ThreadTrace)), PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void* memory = mapped < 0 && mapped > -4096 ? MAP_FAILED : reinterpret_cast<void*>(mapped);
  if (memory == MAP_FAILED) {
    g_states[index].store(nullptr, std::memory_order_release);  // a hole the reader skips
    return nullptr;
  }
  auto* state = new (memory) ThreadTrace;
  state->owned.store(1, std::memory_order_relaxed);
  adopt(state);
  g_states[index].store(state, std::memory_order_release);
  return state;
}

// The calling thread's state, claimed on first use (null: none left).
ThreadTrace* this_thread_state() { return t_state != nullptr ? t_state : claim_state(); }

void count_call(ThreadTrace& state, const trace::CallRecord& record) {
  FunctionCounters& counters = state.counters[record.function];
  __atomic_store_n(&counters.calls, counters.calls + 1, __ATOMIC_RELAXED);
  __atomic_store_n(&counters.ticks, counters.ticks + record.duration_ns, __ATOMIC_RELAXED);
}

void finish(ThreadTrace& state, trace::CallRecord& record, uint64_t now) {
  // Ticks until the reader converts them; a thread that moved between CPUs may read a
  // slightly earlier count at exit. A call left by longjmp or an exception is found only at the
  // thread's next traced call, maybe seconds later: its time is not known, and not counted.
  const bool returned = record.outcome != trace::CallOutcome::kUnwound;
  record.duration_ns = returned && now > record.entry_ns ? now - record.entry_ns : 0;
  count_call(state, record);
  if (g_recording.load(std::memory_order_relaxed)) state.ring.push(record);
}

// The call on top of the stack did not return (see trampoline.h): reported, and its return
// address kept aside in case it was on another stack after all.
void abandon_top(ThreadTrace& state, uint64_t now) {
  PendingCall& call = state.stack[--state.depth];
  call.record.outcome = trace::CallOutcome::kUnwound;
  finish(state, call.record, now);
  state.abandoned[state.abandoned_next++ % kAbandonedSlots] = {call.slot, call.record.return_address};
}

void copy_argument(trace::Capture kind, uint64_t address, trace::CapturedBytes& copy) {
  if (kind == trace::Capture::kString || kind == trace::Capture::kStringAtReturn) {
    trace::SafeString string = trace::safe_read_string(address, copy.bytes, sizeof(copy.bytes));
    copy.length = static_cast<uint8_t>(string.length);
    copy.terminated = string.terminated;
  } else {
    copy.length = static_cast<uint8_t>(trace::safe_read(address, copy.bytes, sizeof(copy.bytes)));
    copy.terminated = false;
  }
}

// At the call: the input arguments are copied, and a slot is kept for each output one, empty
// (unreadable, so printed as an address) unless the call returns.
void capture_arguments(const TracedFunction& function, trace::CallRecord& record) {
  size_t used = 0;
  for (size_t i = 0; i < 6 && used < trace::kCapturedArguments; ++i) {
    if (function.capture[i] == trace::Capture::kNothing || record.arguments.integer[i] == 0) continue;
    trace::CapturedBytes& copy = record.captured[used++];
    copy.argument = static_cast<uint8_t>(i);
    copy.length = 0;
    copy.terminated = false;
    if (!trace::captured_at_return(function.capture[i]))
      copy_argument(function.capture[i], record.arguments.integer[i], copy);
  }
  if (function.capture[trace::kReturnValue] != trace::Capture::kNothing && used < trace::kCapturedArguments) {
    trace::CapturedBytes& copy = record.captured[used++];
    copy.argument = static_cast<uint8_t>(trace::kReturnValue);
    copy.length = 0;
    copy.terminated = false;
  }
  for (size_t i = used; i < trace::kCapturedArguments; ++i) record.captured[i].argument = 0xff;
}

void capture_outputs(const TracedFunction& function, trace::CallRecord& record) {
  for (trace::CapturedBytes& copy : record.captured) {
    if (copy.argument > trace::kReturnValue || !trace::captured_at_return(function.capture[copy.argument])) continue;
    const uint64_t address = copy.argument == trace::kReturnValue ? record.returned.integer
                                                                  : record.arguments.integer[copy.argument];
    if (address != 0) copy_argument(function.capture[copy.argument], address, copy);
  }
}

}  // namespace

extern "C" uintptr_t memprof_trace_on_entry(TracedFunction* function, EntryRegisters* registers,
                                            uint64_t* slot) {
  const auto original = reinterpret_cast<uintptr_t>(function->original);
  if (g_passing_through.load(std::memory_order_relaxed)) return original;
  ThreadTrace* state = t_state;
  if (state == nullptr && (state = claim_state()) == nullptr) {
    g_calls_without_state.fetch_add(1, std::memory_order_relaxed);
    return original;
  }
  if (state->busy || state->ignored) return original;
  state->busy = true;
  const uint64_t return_address = *slot;
  // Calls whose return slot is now at or below the stack pointer have been left (longjmp);
  // a slot equal to ours holding trace_exit is a tail call from a traced function: still live.
  const bool tail_call = return_address == exit_stub();
  while (state->depth > 0) {
    uint64_t* top = state->stack[state->depth - 1].slot;
    if (top > slot || (top == slot && tail_call)) break;
    abandon_top(*state, now_ticks());
  }
  if (state->depth == kMaxDepth) {
    ++state->untimed;
    state->busy = false;
    return original;
  }
  PendingCall& call = state->stack[state->depth];
  call.slot = slot;
  trace::CallRecord& record = call.record;
  record.function = function->id;
  record.tid = state->tid;
  record.return_address = return_address;
  record.outcome = trace::CallOutcome::kReturned;
  std::memcpy(record.arguments.integer.data(), registers->integer, sizeof(registers->integer));
  for (size_t i = 0; i < 8; ++i) record.arguments.vector[i] = registers->vector[i][0];
  capture_arguments(*function, record);
  if (CallerSource source = g_caller_source.load(std::memory_order_relaxed)) {
    record.ruby_line = source(record.ruby_file, sizeof(record.ruby_file));
  } else {
    record.ruby_line = 0;
    record.ruby_file[0] = '\0';  // the record is reused: not a caller of an earlier trace
  }
  ++state->depth;
  *slot = exit_stub();
  record.entry_ns = now_ticks();  // last: the capture is the tracer's time, not the function's
  state->busy = false;
  return original;
}

extern "C" uint64_t memprof_trace_on_exit(ExitRegisters* registers, uint64_t* slot) {
  const uint64_t now = now_ticks();
  ThreadTrace& state = *t_state;  // only this thread's calls were diverted here
  const bool was_busy = state.busy;
  state.busy = true;
  uint64_t return_address = 0;
  uint32_t depth = state.depth;
  while (depth > 0 && state.stack[depth - 1].slot != slot) --depth;
  if (depth > 0) {
    // Calls above ours were left without a return (longjmp past them into our function).
    while (state.depth > depth) abandon_top(state, now);
    PendingCall& call = state.stack[--state.depth];
    call.record.returned.integer = registers->rax;
    call.record.returned.vector = registers->xmm0[0];
    capture_outputs(g_functions[call.record.function], call.record);
    finish(state, call.record, now);
    return_address = call.record.return_address;
  } else {
    // A call reported as abandoned that returned after all (it ran on another stack).
    for (size_t i = 0; i < kAbandonedSlots; ++i) {
      AbandonedCall& call = state.abandoned[(state.abandoned_next - 1 - i) % kAbandonedSlots];
      if (call.slot != slot) continue;
      return_address = call.return_address;
      call = {};
      break;
    }
  }
  state.busy = was_busy;
  return return_address;
}

bool traced_function_table_full() { return g_function_count.load(std::memory_order_acquire) == kMaxFunctions; }

Result<TracedFunction*> traced_function(uintptr_t address) {
  std::lock_guard lock(g_functions_mutex);
  uint32_t count = g_function_count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < count; ++i)
    if (g_functions[i].address == address) return &g_functions[i];
  if (count == kMaxFunctions) return err("more than {} traced functions", kMaxFunctions);
  TracedFunction& function = g_functions[count];
  function.id = count;
  function.address = address;
  auto generate = [&](uintptr_t at) -> Result<std::vector<uint8_t>> {
    hook::x86_64::CodeWriter stub(at);
    const uint8_t movabs_r11[] = {0x49, 0xbb};
    stub.bytes(movabs_r11, sizeof(movabs_r11));
    stub.u64(reinterpret_cast<uint64_t>(&function));
    stub.jump_absolute(reinterpret_cast<uintptr_t>(&memprof_trace_entry));
    return stub.take();
  };
  MEMPROF_TRY(stub, hook::place_trampoline(
                        {kTraceStubKind, address, reinterpret_cast<uintptr_t>(&function)},
                        {address, address}, generate));
  function.stub = reinterpret_cast<void*>(stub);
  g_function_count.store(count + 1, std::memory_order_release);
  return &function;
}

Result<uint32_t> event_source(const char* name) {
  std::lock_guard lock(g_functions_mutex);
  uint32_t count = g_function_count.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < count; ++i)
    if (g_functions[i].event_name != nullptr && std::strcmp(g_functions[i].event_name, name) == 0) return i;
  if (count == kMaxFunctions) return err("more than {} traced functions", kMaxFunctions);
  g_functions[count].id = count;
  g_functions[count].event_name = name;
  g_function_count.store(count + 1, std::memory_order_release);
  return count;
}

void record_event(uint32_t source, uint64_t entry, uint64_t exit, uint64_t argument0, uint64_t argument1) {
  ThreadTrace* state = this_thread_state();
  if (state == nullptr || state->busy || state->ignored || source >= kMaxFunctions) return;
  state->busy = true;
  trace::CallRecord record{};
  record.function = source;
  record.tid = state->tid;
  record.entry_ns = entry;
  record.arguments.integer[0] = argument0;
  record.arguments.integer[1] = argument1;
  finish(*state, record, exit);
  state->busy = false;
}


uint32_t function_count() { return g_function_count.load(std::memory_order_acquire); }

void set_recording(bool on) { g_recording.store(on, std::memory_order_relaxed); }

void stop_tracing_in_child() noexcept { g_passing_through.store(true, std::memory_order_relaxed); }

void start_tracing_here() noexcept { g_passing_through.store(false, std::memory_order_relaxed); }

void set_caller_source(CallerSource source) { g_caller_source.store(source, std::memory_order_relaxed); }

void ignore_this_thread() {
  t_ignored = true;
  if (t_state != nullptr) t_state->ignored = true;
}

Untraced::Untraced() {
  ThreadTrace* state = this_thread_state();
  if (state == nullptr) return;
  was_busy_ = state->busy;
  state->busy = true;
}

Untraced::~Untraced() {
  if (t_state != nullptr) t_state->busy = was_busy_;
}

void wait_for_calls_being_entered() {
  // A call is in flight once on_entry has run, a few dozen instructions after the jump. Counting
  // the threads on their way in took two locked instructions per call (measured on the test VM:
  // 23 ns a pair on one thread, 43 ns on two contending): a pause instead, long enough for a
  // thread that was preempted there to be run again.
  timespec pause{0, 20'000'000};
  ::nanosleep(&pause, nullptr);
}

void restore_return_addresses() {
  ThreadTrace* state = t_state;
  if (state == nullptr || state->depth == 0) return;
  const bool was_busy = state->busy;
  state->busy = true;
  const uint64_t now = now_ticks();
  while (state->depth > 0) {
    PendingCall& call = state->stack[--state->depth];
    // Top down, so that in a tail-call pair the outer call's real address is written last.
    if (*call.slot == exit_stub()) *call.slot = call.record.return_address;
    call.record.outcome = trace::CallOutcome::kUnwound;
    finish(*state, call.record, now);
  }
  state->busy = was_busy;
}

uint32_t thread_state_count() {
  return std::min<uint32_t>(g_state_count.load(std::memory_order_acquire), kMaxThreads);
}

ThreadTrace* thread_state(uint32_t index) { return g_states[index].load(std::memory_order_acquire); }

uint64_t calls_without_state() { return g_calls_without_state.load(std::memory_order_relaxed); }

}  // namespace memprof::tracer
