// memprof frames FILE [--top N]: functions ordered by the stack space their prologue reserves.
// One command finds the function that puts a huge array on the stack (EventMachine's 786 KB
// epoll_event array kept garbage alive through Ruby's conservative stack scan).
#include <elf.h>
#include <fmt/format.h>

#include "cli/command.h"
#include "core/elf/demangle.h"
#include "core/elf/stack_frames.h"

namespace memprof::cli {
namespace {

struct FramesOptions {
  std::string file;
  size_t top = 20;
  bool no_debug_files = false;
};

int run_frames(const FramesOptions& options) {
  auto symbols = elf::ObjectSymbols::load(options.file, !options.no_debug_files);
  if (!symbols) return fail(symbols.message());
  // A relocatable object's symbols are offsets into sections that no address maps yet.
  if (symbols->file().type() == ET_REL)
    return fail(fmt::format("{}: a relocatable object (.o): frames reads linked executables and "
                            "shared libraries; link it first",
                            options.file));
  auto frames = elf::function_frames(*symbols);
  if (frames.empty()) {
    return fail(fmt::format("{}: no function symbols with sizes (stripped, and no debug file found)",
                            options.file));
  }
  size_t shown = options.top == 0 ? frames.size() : std::min(options.top, frames.size());
  fmt::print("{:>10}  {}  {}\n", "BYTES", "FUNCTION", "OBJECT");
  for (size_t i = 0; i < shown; ++i) {
    fmt::print("{:>10}  {}  {}\n", frames[i].frame_bytes, elf::demangle(frames[i].function),
               options.file);
  }
  return 0;
}

MEMPROF_COMMAND(
    "frames", "List functions by the stack space their prologue reserves",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<FramesOptions>();
      sub.add_option("FILE", options->file, "ELF executable or shared library")->required();
      add_count_option(sub, "--top", options->top, "Show the N largest frames (0: all)")
          ->default_val(20);
      sub.add_flag("--no-debug-files", options->no_debug_files,
                   "Do not merge symbols from separate debug files under /usr/lib/debug");
      sub.footer(
          "Decodes each function's first instructions (Zydis) and adds up what the prologue takes\n"
          "from the stack: pushed registers, sub/lea on rsp, and the probing loop gcc emits with\n"
          "-fstack-clash-protection (lea r11,[rsp-N] ... cmp rsp,r11). BYTES is the distance from\n"
          "the return address to rsp once the prologue is done. Function bounds come from .symtab,\n"
          ".dynsym and the separate debug file when one is installed.\n"
          "Output: BYTES  FUNCTION  OBJECT, largest first.");
      return [options] { return run_frames(*options); };
    });

}  // namespace
}  // namespace memprof::cli
