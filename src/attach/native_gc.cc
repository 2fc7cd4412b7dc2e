#include "attach/native_gc.h"

#include <simdjson.h>

#include <fmt/format.h>

#include "attach/agent_client.h"
#include "attach/json_field.h"

namespace memprof::attach {

std::optional<std::string> collect_garbage_before_readout(pid_t pid) {
  constexpr const char* kConsequence = "live blocks include those of Ruby objects no collection has swept";
  auto reply = recording_request(pid, "native-gc");
  if (!reply.ok())
    return fmt::format("memprof: warning: no garbage collection before the readout ({}): {}", reply.message(),
                       kConsequence);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(*reply).get(root) != simdjson::SUCCESS)
    return fmt::format("memprof: warning: malformed reply to the garbage collection: {}", kConsequence);
  bool ruby = false;
  uint64_t collections = 0;
  double ms = 0;
  read_field(root, "ruby", ruby);
  read_field(root, "collections", collections);
  read_field(root, "ms", ms);
  if (!ruby) return std::nullopt;
  if (collections == 0)
    return fmt::format("memprof: process {} has garbage collection disabled (GC.disable): {}", pid, kConsequence);
  return fmt::format("memprof: a full garbage collection in process {} took {:.1f} ms before the readout, so that "
                     "blocks of unreachable Ruby objects are not counted as live (--no-gc skips it)",
                     pid, ms);
}

}  // namespace memprof::attach
