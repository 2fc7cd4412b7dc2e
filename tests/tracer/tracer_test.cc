// The tracer inside this very process: a session traces the functions of libtracer_traced.so
// (tests/tracer/fixtures) and the tests check what a user of `memprof trace` relies on -- exact
// counts from 8 threads, the arguments and results as the function saw them, the return path
// when a call is left by longjmp, a C++ exception or pthread_exit, functions of a library
// dlopen'ed after the start, and every patched byte back after the stop, calls in flight
// included.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures/traced.h"
#include "tracer/process_hooks.h"
#include "tracer/trace_session.h"
#include "tracer/trampoline.h"

namespace memprof::tracer {
namespace {

std::unique_ptr<TraceSession> trace(std::vector<std::string> patterns,
                                    std::map<std::string, trace::ArgumentCapture, std::less<>> captures = {}) {
  TraceRequest request;
  request.patterns = std::move(patterns);
  request.captures = std::move(captures);
  auto session = TraceSession::start(std::move(request));
  EXPECT_TRUE(session.ok()) << session.message();
  return session.ok() ? std::move(*session) : nullptr;
}

uint32_t id_of(const TraceSession& session, std::string_view name) {
  for (const HookedFunction& f : session.initial_functions())
    if (f.name == name) return f.id;
  ADD_FAILURE() << name << " was not hooked";
  return UINT32_MAX;
}

FunctionTotals totals_of(const TraceSession& session, uint32_t id) {
  for (const FunctionTotals& t : session.totals())
    if (t.id == id) return t;
  return {id, 0, 0};
}

std::vector<trace::CallRecord> records_of(TraceSession& session, uint32_t id) {
  std::vector<trace::CallRecord> out;
  for (const trace::CallRecord& r : session.read(1 << 20).records)
    if (r.function == id) out.push_back(r);
  return out;
}

std::vector<uint8_t> first_bytes(void* function) {
  auto* p = static_cast<uint8_t*>(function);
  return {p, p + 16};
}

TEST(Tracer, CountsEveryCallFromEightThreadsExactly) {
  auto session = trace({"traced_add"});
  ASSERT_NE(session, nullptr);
  uint32_t id = id_of(*session, "traced_add");
  constexpr int kThreads = 8, kCalls = 20000;
  std::vector<std::thread> threads;
  std::atomic<long> sum{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      long local = 0;
      for (int i = 0; i < kCalls; ++i) local += traced_add(i, t);
      sum += local;
    });
  for (auto& thread : threads) thread.join();
  long expected = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) expected += i + t;
  EXPECT_EQ(sum.load(), expected);  // every call still returned the right value
  EXPECT_EQ(totals_of(*session, id).calls, uint64_t{kThreads} * kCalls);
}

TEST(Tracer, FunctionsTheTracerItselfWouldCallAreTracedWithoutReenteringIt) {
  // A thread's first traced call claims its state (an mmap, errno kept) before the thread is
  // marked busy: through libc, tracing mmap or __errno_location re-entered the hook without end
  // (a stack overflow; 510 leaked states for 10 mmaps).
  auto session = trace({"mmap", "__errno_location"});
  ASSERT_NE(session, nullptr);
  uint32_t id = id_of(*session, "mmap");
  constexpr int kMaps = 100;
  std::thread([] {
    for (int i = 0; i < kMaps; ++i) {
      errno = 0;
      void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      ASSERT_NE(page, MAP_FAILED);
      ::munmap(page, 4096);
    }
  }).join();
  const uint64_t calls = totals_of(*session, id).calls;
  EXPECT_GE(calls, uint64_t{kMaps});
  EXPECT_LE(calls, uint64_t{kMaps} + 4);  // the thread's own start may map a little
}

TEST(Tracer, RecordsIntegerDoubleAndStringArgumentsAndResults) {
  trace::ArgumentCapture string_first{trace::Capture::kString};
  auto session = trace({"traced_add", "traced_scale", "traced_length"}, {{"traced_length", string_first}});
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(traced_add(40, 2), 42);
  EXPECT_EQ(traced_scale(1.5, 4, 0.25), 6.25);
  const char* long_text = "SELECT name FROM users WHERE id = 1234567890 AND more";
  EXPECT_EQ(traced_length(long_text), strlen(long_text));
  EXPECT_EQ(traced_length("hi"), 2u);

  auto all = session->read(100).records;
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].function, id_of(*session, "traced_add"));
  EXPECT_EQ(static_cast<int>(all[0].arguments.integer[0]), 40);
  EXPECT_EQ(static_cast<int>(all[0].arguments.integer[1]), 2);
  EXPECT_EQ(static_cast<int>(all[0].returned.integer), 42);
  EXPECT_EQ(all[0].tid, static_cast<uint32_t>(gettid()));
  EXPECT_EQ(all[0].outcome, trace::CallOutcome::kReturned);

  double x, y, result;
  std::memcpy(&x, &all[1].arguments.vector[0], 8);
  std::memcpy(&y, &all[1].arguments.vector[1], 8);
  std::memcpy(&result, &all[1].returned.vector, 8);
  EXPECT_EQ(x, 1.5);
  EXPECT_EQ(y, 0.25);
  EXPECT_EQ(all[1].arguments.integer[0], 4u);
  EXPECT_EQ(result, 6.25);

  // The string was copied at the call: 47 bytes of the long one, not terminated; all of "hi".
  char copy[64] = {};
  size_t n = trace::read_captured(all[2], reinterpret_cast<uint64_t>(long_text), copy, sizeof(copy));
  EXPECT_EQ(n, trace::kCaptureBytes - 1);
  EXPECT_EQ(std::string(copy, n), std::string(long_text, n));
  n = trace::read_captured(all[3], all[3].arguments.integer[0], copy, sizeof(copy));
  EXPECT_EQ(std::string(copy, n), std::string("hi\0", 3));
  EXPECT_EQ(trace::read_captured(all[3], 12345, copy, sizeof(copy)), 0u);  // nothing else
}

// An output parameter ('+' in a prototype) is copied when the call returns: at the call the
// buffer held what the caller had left in it (snprintf's destination showed its old text).
TEST(Tracer, AnOutputParameterIsCopiedWhenTheCallReturns) {
  trace::ArgumentCapture output_first{trace::Capture::kStringAtReturn};
  auto session = trace({"traced_fill"}, {{"traced_fill", output_first}});
  ASSERT_NE(session, nullptr);
  char buffer[32] = "old contents";
  EXPECT_EQ(traced_fill(buffer, sizeof(buffer), 7), 8);

  auto all = session->read(100).records;
  ASSERT_EQ(all.size(), 1u);
  char copy[64] = {};
  size_t n = trace::read_captured(all[0], reinterpret_cast<uint64_t>(buffer), copy, sizeof(copy));
  EXPECT_EQ(std::string(copy, n), std::string("filled 7\0", 9));
}

jmp_buf g_jump;

// In a function of its own: no variable of the caller lives across the setjmp.
void jump_out_of_a_traced_call() {
  if (setjmp(g_jump) == 0) traced_jump(&g_jump);
}

TEST(Tracer, LongjmpOutOfATracedCallIsReportedAndLaterCallsStillReturn) {
  auto session = trace({"traced_jump", "traced_add"});
  ASSERT_NE(session, nullptr);
  for (int round = 0; round < 300; ++round) {  // more than the shadow stack holds
    jump_out_of_a_traced_call();
    ASSERT_EQ(traced_add(round, 1), round + 1);
  }
  auto jumps = totals_of(*session, id_of(*session, "traced_jump"));
  auto adds = totals_of(*session, id_of(*session, "traced_add"));
  EXPECT_EQ(jumps.calls, 300u);
  EXPECT_EQ(adds.calls, 300u);
  size_t unwound = 0;
  for (const auto& r : session->read(1 << 20).records) {
    if (r.outcome != trace::CallOutcome::kUnwound) continue;
    ++unwound;
    EXPECT_EQ(r.duration_ns, 0u);  // found only at the next traced call: its time is unknown
  }
  EXPECT_EQ(unwound, 300u);
  EXPECT_EQ(jumps.nanoseconds, 0u);  // and not added up in -c's table
}

void throw_runtime_error() { throw std::runtime_error("through a traced C frame"); }

TEST(Tracer, CppExceptionThroughATracedCallIsCaughtByTheCaller) {
  auto session = trace({"traced_call", "traced_add"});
  ASSERT_NE(session, nullptr);
  for (int round = 0; round < 3; ++round) {
    try {
      traced_call(&throw_runtime_error);
      ADD_FAILURE() << "the exception did not come through";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "through a traced C frame");
    }
    EXPECT_EQ(traced_add(1, 2), 3);
  }
  auto records = records_of(*session, id_of(*session, "traced_call"));
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) EXPECT_EQ(r.outcome, trace::CallOutcome::kUnwound);
  EXPECT_EQ(totals_of(*session, id_of(*session, "traced_add")).calls, 3u);
}

// A session's end counted the calls in flight, unhooked the unwinder when there were none, and
// only then removed the entry hooks: a call entered in between had trace_exit as its return
// address and no unwinder hook, and an exception through it ended the process in
// std::terminate (a helper's program: 3 of 4 runs of `trace --duration 1s`).
TEST(Tracer, ExceptionsThroughTracedCallsStayCatchableWhileTracesStartAndStop) {
  std::atomic<bool> done{false};
  std::atomic<uint64_t> caught{0};
  std::vector<std::thread> throwers;
  for (int t = 0; t < 3; ++t) {
    throwers.emplace_back([&] {
      while (!done.load(std::memory_order_relaxed)) {
        try {
          traced_call(&throw_runtime_error);
        } catch (const std::runtime_error&) {
          caught.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (int round = 0; round < 100; ++round) {
    auto session = trace({"traced_call"});
    ASSERT_NE(session, nullptr);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  done = true;
  for (std::thread& thread : throwers) thread.join();
  EXPECT_GT(caught.load(), 0u);
}

TEST(Tracer, TailCallBetweenTracedFunctionsEndsBothAtOneReturn) {
  auto session = trace({"traced_tail", "traced_add"});
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(traced_tail(41), 42);
  EXPECT_EQ(traced_tail(1), 2);
  EXPECT_EQ(totals_of(*session, id_of(*session, "traced_tail")).calls, 2u);
  EXPECT_EQ(totals_of(*session, id_of(*session, "traced_add")).calls, 2u);
  for (const auto& r : session->read(100).records) EXPECT_EQ(r.outcome, trace::CallOutcome::kReturned);
}

// int call_on_a_misaligned_stack(int (*function)(int, int), int a, int b): calls `function`
// with rsp at 0 mod 16 at its entry instead of the ABI's 8, as hand-written code may; a function
// that does not use the stack (traced_add) runs fine so.
asm(R"(
  .text
  .type call_on_a_misaligned_stack, @function
call_on_a_misaligned_stack:
  mov %rdi, %rax
  mov %esi, %edi
  mov %edx, %esi
  call *%rax
  ret
  .size call_on_a_misaligned_stack, .-call_on_a_misaligned_stack
)");
extern "C" int call_on_a_misaligned_stack(int (*function)(int, int), int a, int b);

// The entry and exit paths saved vector registers with movdqa at offsets that assumed the ABI's
// alignment: such a call crashed the traced process (SIGSEGV) on its way in and on its way out.
TEST(Tracer, AFunctionCalledOnAMisalignedStackIsTracedAndReturns) {
  auto session = trace({"traced_add"});
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(call_on_a_misaligned_stack(&traced_add, 40, 2), 42);
  EXPECT_EQ(call_on_a_misaligned_stack(&traced_add, 1, 2), 3);
  auto records = records_of(*session, id_of(*session, "traced_add"));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(static_cast<int>(records[0].arguments.integer[0]), 40);
  EXPECT_EQ(static_cast<int>(records[0].returned.integer), 42);
  EXPECT_EQ(records[1].outcome, trace::CallOutcome::kReturned);
}

TEST(Tracer, ThreadExitingInsideATracedCallLeavesTheProcessWell) {
  auto session = trace({"traced_exit_thread", "traced_add"});
  ASSERT_NE(session, nullptr);
  for (int i = 0; i < 4; ++i) {
    pthread_t thread;
    ASSERT_EQ(pthread_create(&thread, nullptr, [](void*) -> void* { traced_exit_thread(); return nullptr; }, nullptr), 0);
    ASSERT_EQ(pthread_join(thread, nullptr), 0);
  }
  EXPECT_EQ(traced_add(2, 2), 4);
  EXPECT_EQ(totals_of(*session, id_of(*session, "traced_exit_thread")).calls, 4u);
}

TEST(Tracer, FunctionsOfALibraryLoadedAfterTheStartAreTracedFromTheirFirstCall) {
  auto session = trace({"traced_late"});
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->initial_functions().empty());
  void* library = dlopen(TRACER_LATE_PATH, RTLD_NOW);
  ASSERT_NE(library, nullptr) << dlerror();
  auto late = reinterpret_cast<int (*)(int)>(dlsym(library, "traced_late"));
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late(5), 15);
  EXPECT_EQ(late(6), 18);
  auto readout = session->read(100);
  ASSERT_EQ(readout.new_functions.size(), 1u);
  EXPECT_EQ(readout.new_functions[0].name, "traced_late");
  EXPECT_NE(readout.new_functions[0].object.find("libtracer_late.so"), std::string::npos);
  ASSERT_EQ(readout.records.size(), 2u);
  EXPECT_EQ(readout.records[0].returned.integer, 15u);
  session.reset();
  dlclose(library);
}

// dlclose then dlopen maps the library again, most often at the same address: it looked like
// the object seen already, and was never traced again (0 of 500 calls of a library a program
// loads and unloads in a loop). Each load's calls count, once in the totals.
TEST(Tracer, ALibraryUnloadedAndLoadedAgainIsTracedAgain) {
  auto session = trace({"traced_late"});
  ASSERT_NE(session, nullptr);
  std::set<uintptr_t> addresses;
  for (int load = 1; load <= 3; ++load) {
    void* library = dlopen(TRACER_LATE_PATH, RTLD_NOW);
    ASSERT_NE(library, nullptr) << dlerror();
    auto late = reinterpret_cast<int (*)(int)>(dlsym(library, "traced_late"));
    ASSERT_NE(late, nullptr);
    addresses.insert(reinterpret_cast<uintptr_t>(late));
    EXPECT_EQ(late(load), 3 * load);
    EXPECT_EQ(late(10 * load), 30 * load);
    ASSERT_EQ(dlclose(library), 0) << dlerror();
  }
  auto readout = session->read(100);
  ASSERT_EQ(readout.records.size(), 6u) << addresses.size() << " load address(es)";
  EXPECT_EQ(readout.records[5].returned.integer, 90u);
  ASSERT_EQ(readout.new_functions.size(), addresses.size());  // one per address, not per load
  uint64_t calls = 0;
  for (const FunctionTotals& totals : session->totals()) calls += totals.calls;
  EXPECT_EQ(calls, 6u);
}

TEST(Tracer, StopWhileCallsAreInFlightRestoresEveryByteAndTheCallsReturn) {
  void* function = reinterpret_cast<void*>(&traced_wait);
  // The PLT resolves to the function itself: its first bytes, as the tests see them.
  auto before = first_bytes(dlsym(RTLD_DEFAULT, "traced_wait"));
  auto session = trace({"traced_wait"});
  ASSERT_NE(session, nullptr);
  EXPECT_NE(first_bytes(dlsym(RTLD_DEFAULT, "traced_wait")), before);
  constexpr int kThreads = 4;
  int pipes[kThreads][2];
  std::vector<std::thread> threads;
  std::atomic<int> returned{0};
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(pipe(pipes[t]), 0);
    threads.emplace_back([&, t] { returned += traced_wait(pipes[t][0]) == 'a' + t; });
  }
  while (calls_in_flight() < kThreads) std::this_thread::yield();
  session.reset();  // the hooks go while four calls are inside the function
  EXPECT_EQ(first_bytes(dlsym(RTLD_DEFAULT, "traced_wait")), before);
  for (int t = 0; t < kThreads; ++t) ASSERT_EQ(write(pipes[t][1], "abcd" + t, 1), 1);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(returned.load(), kThreads);
  EXPECT_EQ(calls_in_flight(), 0u);
  for (int t = 0; t < kThreads; ++t) close(pipes[t][0]), close(pipes[t][1]);
  (void)function;
}

TEST(Tracer, DropsOfAnEarlierTraceAreNotReportedByTheNextOne) {
  {
    auto first = trace({"traced_add"});
    ASSERT_NE(first, nullptr);
    for (size_t i = 0; i < kRingRecords + 100; ++i) traced_add(1, 2);  // nobody reads: 100 dropped
    EXPECT_EQ(first->read(0).dropped, 100u);
  }
  auto second = trace({"traced_add"});
  ASSERT_NE(second, nullptr);
  traced_add(3, 4);
  auto readout = second->read(100);
  EXPECT_EQ(readout.dropped, 0u);
  EXPECT_EQ(readout.records.size(), 1u);
}

// A trace with a caller source (--ruby-caller) and the next without: the next one's records say
// nothing of a caller. The file of the call's record, reused per thread, kept the first trace's
// "(without the GVL)", and `trace` without --ruby-caller printed it.
TEST(Tracer, ACallerOfAnEarlierTraceIsNotReportedByTheNextOne) {
  {
    auto first = trace({"traced_add"});
    ASSERT_NE(first, nullptr);
    set_caller_source(+[](char* file, size_t capacity) -> uint32_t {
      std::strncpy(file, "(without the GVL)", capacity);
      return 0;
    });
    traced_add(1, 2);
    set_caller_source(nullptr);
    auto records = records_of(*first, id_of(*first, "traced_add"));
    ASSERT_EQ(records.size(), 1u);
    EXPECT_STREQ(records[0].ruby_file, "(without the GVL)");
  }
  auto second = trace({"traced_add"});
  ASSERT_NE(second, nullptr);
  traced_add(3, 4);
  auto records = records_of(*second, id_of(*second, "traced_add"));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].ruby_line, 0u);
  EXPECT_STREQ(records[0].ruby_file, "");
}

TEST(Tracer, SecondTraceInTheSameProcessIsRefused) {
  auto first = trace({"traced_add"});
  ASSERT_NE(first, nullptr);
  TraceRequest request;
  request.patterns = {"traced_add"};
  auto second = TraceSession::start(request);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.message(), "this process is already being traced by another memprof trace");
}

TEST(Tracer, GlobsMatchEveryDefinedFunctionOnce) {
  auto session = trace({"traced_*"});
  ASSERT_NE(session, nullptr);
  std::vector<std::string> names;
  for (const auto& f : session->initial_functions()) names.push_back(f.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"traced_add", "traced_call", "traced_call_first", "traced_exit_thread",
                                             "traced_fill", "traced_jump", "traced_length", "traced_scale",
                                             "traced_tail", "traced_wait"}));
  // The traced_short* functions are shorter than the jump, and their only caller through a GOT
  // is this test binary, which holds the tracer and is never hooked: reported (four of one
  // object: on one line), not listed.
  std::vector<std::string> problems = session->read(1).problems;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(problems[0].ends_with("libtracer_traced.so: 4 functions cannot be traced: traced_short, traced_short_2, "
                                    "traced_short_3, traced_short_4 (-v: why, for each)"))
      << problems[0];
}

// -x's filter expressions reach the agent whole: a library part picks the defining object, and
// a rule that removes takes a function out again.
TEST(Tracer, AFilterExpressionPicksFunctionsByDefiningLibrary) {
  auto session = trace({"traced_a*+traced_f*@libtracer_traced.so-traced_fill+traced_length@libc.so*"});
  ASSERT_NE(session, nullptr);
  std::vector<std::string> names;
  for (const auto& f : session->initial_functions()) names.push_back(f.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"traced_add"}));  // traced_length is not libc's
  EXPECT_EQ(TraceSession::start({.patterns = {"*@libruby-3.1.so*"}}).message(),
            "-x '*@libruby-3.1.so*': the rule '-3.1.so*' names no function (no name starts with a digit): every "
            "'+' and '-' starts a rule, as in ltrace: write a library name that has one with '?' ('@libruby?3.1*', "
            "'@libstdc??*') or give it to -l");
}

// glibc's memmove is an IFUNC: its implementation (here __memmove_avx_unaligned_erms) starts
// where __mempcpy_avx_unaligned_erms jumps, 3 bytes in. A jump over its first bytes made that
// mempcpy run garbage (`trace -x '*'` killed the process): it is traced through the GOT only.
TEST(Tracer, AnIfuncImplementationIsNotEntryHookedAndWhatJumpsIntoItStillWorks) {
  auto session = trace({"memmove"});
  ASSERT_NE(session, nullptr);
  ASSERT_EQ(session->initial_functions().size(), 1u);
  EXPECT_TRUE(session->initial_functions().front().through_got);
  std::vector<std::string> problems = session->read(1).problems;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("its entry cannot be patched (an IFUNC implementation"), std::string::npos)
      << problems[0];
  void* (*volatile copy_and_advance)(void*, const void*, size_t) = &mempcpy;
  char source[64] = "every byte of this arrives";
  char destination[64] = {};
  EXPECT_EQ(copy_and_advance(destination, source, 27), destination + 27);
  EXPECT_STREQ(destination, source);
}

}  // namespace
}  // namespace memprof::tracer

namespace memprof::tracer {
namespace {

TEST(MalformedGlob, AnUnclosedBracketIsNamedAndEverythingElseIsFine) {
  for (const char* glob : {"malloc", "sqlite3_*", "[a-z]*", "[!_]*", "[]x]", "\\[literal", "a?c", "ruby:gc"}) {
    EXPECT_EQ(malformed_glob(glob), "") << glob;
  }
  for (const char* glob : {"[a-", "x[", "[!", "[]", "ok[a]then[b"}) {
    EXPECT_NE(malformed_glob(glob), "") << glob;
  }
}

}  // namespace
}  // namespace memprof::tracer
