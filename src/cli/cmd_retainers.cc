// memprof retainers DUMP ADDRESS: the roots and objects that reference an object, its immediate
// dominator, and whether only machine_context keeps it alive.
#include "cli/dump_object_command.h"

namespace memprof::cli {
namespace {

MEMPROF_COMMAND("retainers", "Objects and roots referencing an object in a heap dump",
                [](CLI::App& sub) { return setup_dominated_object_command(sub, heap::render_retainers); });

}  // namespace
}  // namespace memprof::cli
