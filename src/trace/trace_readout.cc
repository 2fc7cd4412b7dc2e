#include "trace/trace_readout.h"

#include <simdjson.h>

#include <cstring>

namespace memprof::trace {

Result<Readout> parse_readout(std::string_view body) {
  size_t newline = body.find('\n');
  if (newline == std::string_view::npos) return err("malformed trace readout from the agent");
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), newline).get(root) != simdjson::SUCCESS)
    return err("malformed trace readout from the agent");
  Readout out;
  uint64_t records = 0;
  if (root["dropped"].get(out.dropped) || root["untraced"].get(out.untraced) ||
      root["in_flight"].get(out.in_flight) || root["exiting"].get(out.exiting) || root["exec"].get(out.exec) ||
      root["records"].get(records))
    return err("malformed trace readout from the agent (counts)");
  simdjson::dom::array functions, problems, totals;
  if (root["functions"].get(functions) || root["problems"].get(problems) || root["totals"].get(totals))
    return err("malformed trace readout from the agent (lists)");
  for (simdjson::dom::element f : functions) {
    ReadoutFunction function;
    uint64_t id = 0;
    std::string_view name, object;
    if (f["id"].get(id) || f["name"].get(name) || f["object"].get(object) || f["got"].get(function.through_got))
      return err("malformed trace readout from the agent (function)");
    function.id = static_cast<uint32_t>(id);
    function.name = name;
    function.object = object;
    out.functions.push_back(std::move(function));
  }
  for (simdjson::dom::element p : problems) {
    std::string_view text;
    if (p.get(text) == simdjson::SUCCESS) out.problems.emplace_back(text);
  }
  // Absent from an agent of an earlier memprof, which a process keeps mapped after a detach.
  if (uint64_t n = 0; root["children"].get(n) == simdjson::SUCCESS) out.children = n;
  if (simdjson::dom::array untraceable; root["untraceable"].get(untraceable) == simdjson::SUCCESS) {
    for (simdjson::dom::element name : untraceable) {
      std::string_view text;
      if (name.get(text) == simdjson::SUCCESS) out.untraceable.emplace_back(text);
    }
  }
  for (simdjson::dom::element t : totals) {
    simdjson::dom::array row;
    uint64_t id = 0, calls = 0, ns = 0;
    if (t.get(row) || row.at(0).get(id) || row.at(1).get(calls) || row.at(2).get(ns))
      return err("malformed trace readout from the agent (totals)");
    out.totals.push_back({static_cast<uint32_t>(id), calls, ns});
  }
  std::string_view bytes = body.substr(newline + 1);
  if (bytes.size() != records * sizeof(CallRecord))
    return err("truncated trace readout from the agent: {} bytes for {} records", bytes.size(), records);
  out.records.resize(records);
  if (records != 0) std::memcpy(out.records.data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace memprof::trace
