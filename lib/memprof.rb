# frozen_string_literal: true

# memprof: which lines of Ruby code create the objects that stay alive.
#
#   require "memprof"
#   Memprof.start
#   ...
#   Memprof.stats          # "    100 app.rb:12:String", largest first, on $stderr
#   Memprof.stop
#
#   Memprof.track { work }                  # start, yield, stats, stop
#   report = Memprof.report { work }        # allocated and retained by gem/file/location/class
#   report.print; report.to_json
#   Memprof.dump(obj); Memprof.dump_all("heap.json")
#
# Allocations are seen through GOT hooks on libruby's allocation functions (the NEWOBJ event
# where hooks cannot reach); see docs/ruby.md for the mechanism and its measured cost.
module Memprof
  class Error < StandardError; end
  # Memprof.stats and friends before Memprof.start.
  class NotStartedError < Error; end
  # Memprof.track or Memprof.report while tracking is already on.
  class AlreadyStartedError < Error; end
  # A Ruby implementation, version or platform memprof cannot profile.
  class UnsupportedRuntimeError < Error; end
end

require_relative "memprof/version"
require_relative "memprof/runtime"
Memprof::Runtime.check!
require "memprof/memprof"   # lib/memprof/memprof.so (the build copies it there; gem install too)
require_relative "memprof/report"
require_relative "memprof/compaction"

module Memprof
  autoload :Middleware, File.expand_path("memprof/middleware", __dir__)

  # Objects allocated by the gem's own Ruby code are tracked but never reported.
  Native.ignore_path_prefix(File.expand_path("memprof.rb", __dir__))
  Native.ignore_path_prefix(File.expand_path("memprof", __dir__) + File::SEPARATOR)

  MECHANISMS = %i[auto hooks tracepoint].freeze

  class << self
    # Starts tracking every Ruby object allocated from now on, in every Ruby thread. Returns
    # true, or false when tracking was already on. `mechanism:` :auto (GOT hooks when libruby
    # is a shared library, else the NEWOBJ event), :hooks or :tracepoint.
    def start(mechanism: :auto)
      unless MECHANISMS.include?(mechanism)
        raise ArgumentError, "Memprof.start: unknown mechanism #{mechanism.inspect} (expected one of #{MECHANISMS.map(&:inspect).join(', ')})"
      end

      Compaction.sync_auto_compact
      Native.start(mechanism)
    end

    # Stops tracking and forgets what was tracked. Returns true, or false when it was off.
    def stop
      Native.stop
    end

    def started?
      Native.active?
    end

    # :hooks or :tracepoint while tracking, else nil.
    def mechanism
      Native.mechanism
    end

    # Prints one line per group of live tracked objects, format("%7d %s:%d:%s", count, file,
    # line, class_name), largest group first. "Live" means not yet freed by the GC: run
    # GC.start first to see only what is still reachable.
    def stats(io = $stderr)
      ensure_started("stats")
      Native.stats_lines.each { |line| io.puts(line) }
      nil
    end

    # Prints like stats, then forgets every tracked object (tracking goes on).
    def stats!(io = $stderr)
      stats(io)
      Native.clear
      nil
    end

    # Starts tracking, yields, prints stats to io and stops. Returns the block's value. If the
    # block raises, tracking stops and the exception propagates without stats.
    def track(io = $stderr)
      raise ArgumentError, "Memprof.track needs a block" unless block_given?

      ensure_not_started("track")
      start
      begin
        result = yield
        stats(io)
        result
      ensure
        stop
      end
    end

    # Profiles the block: objects and bytes it allocated, and those retained (still alive after
    # a full GC at its end), as a Memprof::Report. GC is disabled while the block runs, as
    # memory_profiler does, so that every object it allocates can be measured at its end.
    def report
      raise ArgumentError, "Memprof.report needs a block" unless block_given?

      ensure_not_started("report")
      Compaction.sync_auto_compact
      Native.report_begin
      begin
        yield
      ensure
        allocated, retained = Native.report_end
      end
      Report.new(allocated, retained)
    end

    # Writes one object as a JSON line (ObjectSpace.dump's format), with "file" and "line" of
    # its allocation when memprof tracked it.
    def dump(obj, io = $stdout)
      require "objspace"
      io.puts(Native.annotate_object_line(obj, ObjectSpace.dump(obj).chomp))
      nil
    end

    # Writes a heap dump in ObjectSpace.dump_all's JSON-lines format to `path`, with "file" and
    # "line" of allocation on every object memprof tracked. Returns the path.
    def dump_all(path)
      require "objspace"
      path = path.to_str
      raw = "#{path}.raw.#{Process.pid}"
      gc_was_disabled = GC.disable
      begin
        # With GC off and no sweep pending (prune finishes it), no tracked object can be freed
        # and its slot reused between the dump and the annotation.
        Native.prune
        File.open(raw, "w") { |f| ObjectSpace.dump_all(output: f) }
        Native.annotate_dump_file(raw, path)
      ensure
        GC.enable unless gc_was_disabled
        File.unlink(raw) if File.exist?(raw)
      end
      path
    end

    # Memory and table counters of the current session (entries, table_bytes, sites, ...).
    def info
      Native.info
    end

    private

    def ensure_started(what)
      return if Native.active?

      raise NotStartedError, "Memprof.#{what}: tracking is not started (call Memprof.start first, or use Memprof.track)"
    end

    def ensure_not_started(what)
      return unless Native.active?

      raise AlreadyStartedError, "Memprof.#{what}: tracking is already started (Memprof.start or an enclosing Memprof.track/report); nested tracking is not supported"
    end
  end
end
