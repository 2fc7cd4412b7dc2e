// libFuzzer target for memprof_trace: any prototype text must parse or be rejected line by line,
// and any call of what parsed must format, with registers and memory taken from the input too --
// never reading out of bounds, overflowing, looping forever or aborting (ASan and UBSan).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/call_format.h"
#include "trace/printf_arguments.h"
#include "trace/prototype.h"

namespace {

using namespace memprof::trace;

// The input serves as the traced process's memory from this address on.
constexpr uint64_t kMemoryBase = 0x10000;

uint64_t word_at(std::string_view data, size_t index) {
  uint64_t word = 0;
  size_t offset = (index * 8) % (data.size() + 1);
  size_t available = std::min<size_t>(8, data.size() - offset);
  if (available > 0) std::memcpy(&word, data.data() + offset, available);
  // Half the registers point into the input, so strings and pointers get dereferenced.
  return index % 2 == 0 ? kMemoryBase + word % (data.size() + 16) : word;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  std::string_view data(reinterpret_cast<const char*>(bytes), size);
  PrototypeSet set;
  (void)add_prototypes(set, data, "fuzz.conf");
  (void)printf_arguments(data);

  MemoryReader read = [data](uint64_t address, char* out, size_t wanted) -> size_t {
    if (address < kMemoryBase || address - kMemoryBase >= data.size()) return 0;
    size_t offset = address - kMemoryBase;
    size_t n = std::min(wanted, data.size() - offset);
    std::memcpy(out, data.data() + offset, n);
    return n;
  };
  CapturedCall call;
  for (size_t i = 0; i < call.arguments.integer.size(); ++i) call.arguments.integer[i] = word_at(data, i);
  for (size_t i = 0; i < call.arguments.vector.size(); ++i) call.arguments.vector[i] = word_at(data, 6 + i);
  call.returned = ReturnRegisters{word_at(data, 14), word_at(data, 15)};
  FormatOptions options;
  options.string_limit = size % 64;
  for (const auto& [name, prototype] : set.prototypes()) {
    (void)describe(prototype);
    (void)call_line(name, format_call(&prototype, call, read, options));
  }
  (void)format_call(nullptr, call, read, options);
  return 0;
}
