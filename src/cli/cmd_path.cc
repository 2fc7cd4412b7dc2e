// memprof path DUMP ADDRESS: the shortest chain of references from a root to an object.
#include "cli/dump_object_command.h"

namespace memprof::cli {
namespace {

MEMPROF_COMMAND("path", "Shortest path from a root (vm, machine_context, ...) to an object in a heap dump",
                [](CLI::App& sub) {
                  return setup_dump_object_command(sub, heap::render_root_path);
                });

}  // namespace
}  // namespace memprof::cli
