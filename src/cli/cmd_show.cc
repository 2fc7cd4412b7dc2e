// memprof show DUMP ADDRESS: one object with its fields, retained size and dominator, what it
// references, what references it, and its path from a root -- where a sample address of
// `analyze --samples` or `diff --samples` leads.
#include "cli/dump_object_command.h"

namespace memprof::cli {
namespace {

MEMPROF_COMMAND("show", "One object of a heap dump: fields, references, retainers, retained size, path",
                [](CLI::App& sub) { return setup_dominated_object_command(sub, heap::render_object); });

}  // namespace
}  // namespace memprof::cli
