// libFuzzer target for memprof_elf: every parse path on arbitrary bytes must return a value or an
// error, never read out of bounds, overflow, loop forever or abort (built with ASan and UBSan).
#include <cstddef>
#include <cstdint>

#include "core/elf/elf_file.h"
#include "core/elf/object_symbols.h"
#include "core/elf/stack_frames.h"

namespace {

using memprof::elf::Bytes;
using memprof::elf::ElfFile;

void exercise_symbols(const ElfFile& file) {
  auto symbols = memprof::elf::ObjectSymbols::from_file(file);
  if (!symbols.ok()) return;
  for (const auto& entry : symbols->entries()) {
    (void)symbols->find(entry.name);
    (void)symbols->find_address(entry.address + entry.size / 2);
    (void)entry.display_name();
  }
  (void)symbols->find("seed_versioned@SEED_1");
  (void)symbols->find_address(0);
  // Decodes the code of every sized function symbol with Zydis.
  (void)memprof::elf::function_frames(*symbols);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes bytes(data, size);
  // The prologue analyser takes raw code too.
  (void)memprof::elf::prologue_frame_bytes(bytes.first(size < 512 ? size : 512));

  auto file = ElfFile::parse(bytes, "fuzz");
  if (!file.ok()) return 0;
  for (const auto& section : file->sections()) (void)file->section_data(section);
  for (const auto& segment : file->segments()) (void)file->bytes_at_address(segment.vaddr, 16);
  (void)file->first_load_address();
  (void)file->dynamic_symbols();
  (void)file->static_symbols();
  for (const char* name : {"seed_function", "seed_versioned", "puts", "main"}) {
    (void)file->find_dynamic_symbol(name);
    (void)file->find_dynamic_symbol(name, "SEED_1");
  }
  (void)file->relocations();
  (void)file->dynamic_entries();
  (void)file->needed_libraries();
  (void)file->soname();
  (void)file->build_id();
  (void)file->debuglink();
  (void)file->usdt_probes();
  exercise_symbols(*file);
  return 0;
}
