# frozen_string_literal: true

# Profiles one program with one tool in this fresh process and prints what the tool reports,
# as one JSON line:
#   ruby -I <repo>/lib tests/ruby_parity/profile.rb {memprof|memory_profiler} {known_sites|shop}
# Output: {"allocated": {"file:line": {class: count}}, "retained": {...}} from memprof (its
# report groups by location and class), {"allocated": {"file:line": count}, "retained": {...}}
# from memory_profiler (whose report groups by location or by class, not by both).
#
# Each program runs once before it is profiled: the first execution of a call site can
# allocate and keep Ruby's lazily built internal tables (one Hash at the first interpolation
# in KnownSites.scratch, for instance), which would show up as an extra object at that line.
require "json"

PROGRAMS = {
  "known_sites" => lambda do
    require_relative "fixtures/known_sites"
    KnownSites.run
    -> { KnownSites.run }
  end,
  "shop" => lambda do
    require_relative "../../examples/shop/traffic"
    traffic = Shop::Traffic.new
    traffic.serve(100)
    -> { traffic.serve(300) }
  end
}.freeze

def memprof_report(program)
  require "memprof"
  kept = nil
  report = Memprof.report { kept = program.call }
  by_class = lambda do |rows|
    rows.each_with_object(Hash.new { |h, k| h[k] = Hash.new(0) }) do |row, out|
      out[row.fetch("location")][row.fetch("class")] += row.fetch("count")
    end
  end
  hash = report.to_h
  [kept, { "allocated" => by_class.call(hash.fetch("allocated").fetch("by_location")),
           "retained" => by_class.call(hash.fetch("retained").fetch("by_location")) }]
end

def memory_profiler_report(program)
  require "memory_profiler"
  kept = nil
  report = MemoryProfiler.report(top: 1_000_000) { kept = program.call }
  by_location = ->(rows) { rows.to_h { |row| [row.fetch(:data), row.fetch(:count)] } }
  [kept, { "allocated" => by_location.call(report.allocated_objects_by_location),
           "retained" => by_location.call(report.retained_objects_by_location) }]
end

TOOLS = { "memprof" => :memprof_report, "memory_profiler" => :memory_profiler_report }.freeze

tool, program = ARGV
unless ARGV.size == 2 && TOOLS.key?(tool) && PROGRAMS.key?(program)
  abort "usage: profile.rb {#{TOOLS.keys.join('|')}} {#{PROGRAMS.keys.join('|')}}"
end
kept, result = send(TOOLS.fetch(tool), PROGRAMS.fetch(program).call)
puts JSON.generate(result.merge("kept" => kept.is_a?(Array) ? kept.size : kept))
