// What `memprof trace` and the agent say to each other (over the agent's protocol, protocol.h):
//
//   trace-start BODY   BODY is lines: "records 0|1", "ruby_caller 0|1", "x GLOB" (functions), "l GLOB" (objects),
//                      "capture NAME KINDS" (KINDS: seven of '-' nothing, 's' string, 'b' bytes,
//                      'S'/'B' the same copied at return, one per integer argument register
//                      and one for the returned value). Reply: a readout.
//   trace-read         a readout of what happened since the last one
//   trace-stop         ends the trace (hooks removed); the last readout
//
// A readout is one line of JSON, a newline, then `records` CallRecords as they are in memory:
//   {"functions":[{"id","name","object","address","got"}],"problems":[..],"untraceable":[names],"dropped","untraced",
//    "in_flight","exiting","exec","children","records","totals":[[id,calls,nanoseconds],..]}
// "functions" lists the functions hooked since the last readout; "totals" is every function of
// the trace since its start. "exiting": the process called exit() and waits (2 s at most) for
// a trace-stop, so that its last calls are not lost. "children": child processes the process
// started since the trace started (agent/child_processes.h), which are not traced.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/util/result.h"
#include "tracer/trace_session.h"

namespace memprof::tracer {

std::string encode_trace_request(const TraceRequest& request);
Result<TraceRequest> decode_trace_request(std::string_view body);

std::string encode_readout(const TraceReadout& readout, const std::vector<HookedFunction>& functions,
                           const std::vector<FunctionTotals>& totals, uint64_t in_flight);

}  // namespace memprof::tracer
