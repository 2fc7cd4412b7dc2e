# frozen_string_literal: true

# One measurement in a fresh process:
#   ruby [-I <repo>/lib] bench/ruby/child.rb WORKLOAD PROFILER SCALE
# Prepares the workload (boot, warm-up: not measured), runs it once inside the profiler and
# prints one JSON line: {"workload", "profiler", "seconds" (wall), "cpu_seconds" (the
# process's CPU time), "description"}.
require "json"
require_relative "profilers"
require_relative "workloads/alloc_loop"
require_relative "workloads/rails_requests"

WORKLOADS = { "alloc" => AllocLoop, "rails" => RailsRequests }.freeze

USAGE = "usage: child.rb {#{WORKLOADS.keys.join('|')}} " \
        "{#{Profilers::ALL.map(&:name).join('|')}} SCALE (a positive number)"

workload_name, profiler_name, scale = ARGV
scale = Float(scale, exception: false) if scale
unless ARGV.size == 3 && WORKLOADS.key?(workload_name) &&
       Profilers::ALL.any? { |p| p.name == profiler_name } && scale&.positive?
  abort USAGE
end

workload = WORKLOADS.fetch(workload_name)
profiler = Profilers.find(profiler_name)
profiler.load
workload.prepare(scale)
GC.start
time, result = profiler.measure { workload.run }
profiler.verify(workload, result)
puts JSON.generate(workload: workload_name, profiler: profiler.name, seconds: time.wall,
                   cpu_seconds: time.cpu, description: workload.description)
