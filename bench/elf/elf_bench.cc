// Costs of the ELF and process lookups, on Debian's libc and libruby:
//   - a .dynsym lookup through .gnu.hash against the linear scan it replaces (side by side),
//   - loading an object's merged symbols, indexing this whole process,
//   - address -> symbol lookups, and the prologue analysis of every function of libruby.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/elf/elf_file.h"
#include "core/elf/object_symbols.h"
#include "core/elf/stack_frames.h"
#include "core/proc/symbol_index.h"

namespace {

using memprof::elf::ElfFile;
using memprof::elf::ObjectSymbols;

constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";
constexpr const char* kLibruby = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1";

// Names spread over the table, so neither method is favoured by position.
const std::vector<std::string> kNames = {"memcpy", "malloc", "pthread_create", "qsort", "zlib_missing",
                                         "fopen", "__libc_start_main", "strtod", "wcslen", "getaddrinfo"};

const ElfFile& libc_file() {
  static const ElfFile file = *ElfFile::open(kLibc);
  return file;
}

void BM_DynsymLookupGnuHash(benchmark::State& state) {
  const ElfFile& file = libc_file();
  size_t i = 0;
  for (auto _ : state) {
    auto found = file.find_dynamic_symbol(kNames[i++ % kNames.size()]);
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_DynsymLookupGnuHash);

void BM_DynsymLookupLinearScan(benchmark::State& state) {
  const ElfFile& file = libc_file();
  size_t i = 0;
  for (auto _ : state) {
    auto symbols = file.dynamic_symbols();
    const std::string& name = kNames[i++ % kNames.size()];
    const memprof::elf::Symbol* found = nullptr;
    for (const auto& symbol : *symbols) {
      if (symbol.name == name && symbol.defined() && symbol.default_version) found = &symbol;
    }
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_DynsymLookupLinearScan);

void BM_ObjectSymbolsLoadLibruby(benchmark::State& state) {
  for (auto _ : state) {
    auto symbols = ObjectSymbols::load(kLibruby);
    if (!symbols.ok()) {
      state.SkipWithError(symbols.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(symbols->entries().size());
  }
}
BENCHMARK(BM_ObjectSymbolsLoadLibruby)->Unit(benchmark::kMillisecond);

void BM_SymbolIndexForSelf(benchmark::State& state) {
  for (auto _ : state) {
    auto index = memprof::proc::SymbolIndex::for_self();
    benchmark::DoNotOptimize(index->objects().size());
  }
}
BENCHMARK(BM_SymbolIndexForSelf)->Unit(benchmark::kMillisecond);

void BM_AddressLookup(benchmark::State& state) {
  auto index = memprof::proc::SymbolIndex::for_self();
  // Addresses inside libc functions this process has loaded.
  std::vector<uint64_t> addresses;
  for (const char* name : {"memcpy", "malloc", "qsort", "fopen", "strtod"}) {
    for (const auto& found : index->find(name)) addresses.push_back(found.address + 5);
  }
  size_t i = 0;
  for (auto _ : state) {
    auto found = index->lookup(addresses[i++ % addresses.size()]);
    benchmark::DoNotOptimize(found);
  }
}
BENCHMARK(BM_AddressLookup);

void BM_FramesLibruby(benchmark::State& state) {
  auto symbols = ObjectSymbols::load(kLibruby);
  if (!symbols.ok()) {
    state.SkipWithError(symbols.message().c_str());
    return;
  }
  for (auto _ : state) {
    auto frames = memprof::elf::function_frames(*symbols);
    benchmark::DoNotOptimize(frames.size());
  }
  state.counters["functions"] = static_cast<double>(memprof::elf::function_frames(*symbols).size());
}
BENCHMARK(BM_FramesLibruby)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
