# frozen_string_literal: true

require "stringio"

# The tools compared by the benchmark, each used the way its users use it. A profiler's
# +measure+ runs the workload inside the tool's scope and returns [Clock, workload result]:
# the time covers exactly what the user waits for (starting the tool, the workload, stopping
# it, building its report), never the checks that follow. +verify+ then proves that the tool
# really saw the workload's allocations, so a tool that silently recorded nothing cannot pass
# for a fast one.
module Profilers
  # Wall time and the CPU time of the whole process (every thread, user and system). On a
  # quiet machine the two agree for these single-threaded workloads; on a shared one CPU time
  # is the steadier measure, because it does not count the time other processes ran.
  Clock = Struct.new(:wall, :cpu) do
    def -(other) = Clock.new(wall - other.wall, cpu - other.cpu)
    def +(other) = Clock.new(wall + other.wall, cpu + other.cpu)
  end

  def self.now
    Clock.new(Process.clock_gettime(Process::CLOCK_MONOTONIC),
              Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID))
  end

  # Ruby alone.
  class Plain
    def name = "plain"
    def label = "plain Ruby"
    def load; end

    def measure
      t0 = Profilers.now
      result = yield
      [Profilers.now - t0, result]
    end

    def verify(_workload, _result); end
  end

  # memprof's full tracking: Memprof.start ... Memprof.stop. Memprof.stats is read between
  # the workload and stop (untimed, after a full GC), because the live table is what the
  # check needs.
  class MemprofTracking
    def name = "memprof"
    def label = "memprof (start/stop)"
    def mechanism = :auto

    def load
      require "memprof"
    end

    def measure
      t0 = Profilers.now
      Memprof.start(mechanism: mechanism)
      result = yield
      t1 = Profilers.now
      GC.start
      out = StringIO.new
      Memprof.stats(out)
      @live = Profilers.parse_stats(out.string)
      t2 = Profilers.now
      Memprof.stop
      [(t1 - t0) + (Profilers.now - t2), result]
    end

    def verify(workload, _result)
      Profilers.check_site(label, workload, @live)
    end
  end

  # The same on Ruby's NEWOBJ/FREEOBJ events instead of memprof's allocation hooks: the
  # fallback mechanism, measured to show what the hooks save. Not in the default columns.
  class MemprofTracepoint < MemprofTracking
    def name = "memprof_tracepoint"
    def label = "memprof (NEWOBJ tracepoint)"
    def mechanism = :tracepoint
  end

  # memprof's report: allocations and retained objects by location, with the full GC at the
  # end of the block and the grouping included, as memory_profiler's report is.
  class MemprofReport
    def name = "memprof_report"
    def label = "memprof report"

    def load
      require "memprof"
    end

    def measure
      result = nil
      t0 = Profilers.now
      @report = Memprof.report { result = yield }
      [Profilers.now - t0, result]
    end

    def verify(workload, _result)
      retained = Hash.new(0)
      @report.to_h.fetch("retained").fetch("by_location").each do |row|
        retained[row.fetch("location")] += row.fetch("count")
      end
      Profilers.check_site(label, workload, retained)
    end
  end

  # Ruby's own allocation tracing, the basis of memory_profiler and of heap dumps with file/line.
  # The live objects are counted before tracing stops (untimed): once it has stopped, Ruby no
  # longer removes the entries of freed objects, and a new object in a reused slot would show
  # the old object's file:line.
  class ObjectSpaceTracing
    def name = "objectspace"
    def label = "ObjectSpace.trace_object_allocations"

    def load
      require "objspace"
    end

    def measure
      t0 = Profilers.now
      ObjectSpace.trace_object_allocations_start
      result = yield
      t1 = Profilers.now
      @live = live_by_location
      t2 = Profilers.now
      ObjectSpace.trace_object_allocations_stop
      ObjectSpace.trace_object_allocations_clear
      [(t1 - t0) + (Profilers.now - t2), result]
    end

    def verify(workload, _result)
      Profilers.check_site(label, workload, @live)
    end

    private

    def live_by_location
      GC.start
      live = Hash.new(0)
      ObjectSpace.each_object do |obj|
        file = ObjectSpace.allocation_sourcefile(obj) or next
        live["#{file}:#{ObjectSpace.allocation_sourceline(obj)}"] += 1
      end
      live
    end
  end

  # The memory_profiler gem (Debian's ruby-memory-profiler), report included.
  class MemoryProfilerReport
    def name = "memory_profiler"
    def label = "memory_profiler"

    def load
      require "memory_profiler"
    end

    def measure
      result = nil
      t0 = Profilers.now
      # top: every location, so that the check below can find the kept site.
      @report = MemoryProfiler.report(top: 1_000_000) { result = yield }
      [Profilers.now - t0, result]
    end

    def verify(workload, _result)
      retained = @report.retained_objects_by_location.to_h { |row| [row[:data], row[:count]] }
      Profilers.check_site(label, workload, retained)
    end
  end

  ALL = [Plain, MemprofTracking, MemprofTracepoint, MemprofReport, ObjectSpaceTracing,
         MemoryProfilerReport].map(&:new).freeze
  DEFAULT = (ALL.map(&:name) - ["memprof_tracepoint"]).freeze

  def self.find(name)
    ALL.find { |p| p.name == name } or
      raise ArgumentError, "unknown profiler #{name.inspect} (known: #{ALL.map(&:name).join(', ')})"
  end

  # Memprof.stats lines are format("%7d %s:%d:%s", count, file, line, class_name); returns
  # {"file:line" => live count} summed over classes.
  def self.parse_stats(text)
    text.each_line.with_object(Hash.new(0)) do |line, counts|
      m = /\A\s*(\d+) (.+):(\d+):(.*)\z/.match(line.chomp) or
        raise "unexpected Memprof.stats line: #{line.inspect}"
      counts["#{m[2]}:#{m[3]}"] += Integer(m[1])
    end
  end

  # Ruby's GC scans the machine stack conservatively: a stale copy of the last iteration's
  # pointer can keep one or two garbage objects alive past a full GC.
  CONSERVATIVE_STACK_SLACK = 2

  # Every workload names the file:line that allocates the objects it keeps alive and how many
  # it keeps; the profiler must attribute exactly those to that line.
  def self.check_site(label, workload, counts_by_location)
    site = workload.kept_site
    seen = counts_by_location.fetch(site, 0)
    return if seen.between?(workload.kept_count, workload.kept_count + CONSERVATIVE_STACK_SLACK)

    raise "#{label} saw #{seen} live objects at #{site}, the workload keeps #{workload.kept_count}"
  end
end
