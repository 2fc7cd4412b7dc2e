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
#   Memprof.dump(obj); Memprof.dump { work }; Memprof.dump_all("heap.json")
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
# lib/memprof/memprof.so (the build copies it there; gem install too), or the extension for this
# Ruby that `memprof attach` chose (src/agent/ruby_calls.cc).
require(Memprof.instance_variable_get(:@agent_extension) || "memprof/memprof")
require_relative "memprof/report"
require_relative "memprof/compaction"
require_relative "memprof/output"

module Memprof
  autoload :Middleware, File.expand_path("memprof/middleware", __dir__)

  # Objects allocated by the gem's own Ruby code are tracked but never reported.
  Native.ignore_path_prefix(File.expand_path("memprof.rb", __dir__))
  Native.ignore_path_prefix(File.expand_path("memprof", __dir__) + File::SEPARATOR)

  MECHANISMS = %i[auto hooks tracepoint].freeze
  FORK_MODES = %i[keep reset].freeze

  class << self
    # Starts tracking every Ruby object allocated from now on, in every Ruby thread and Ractor.
    # Returns true, or false when tracking was already on. `mechanism:` :auto (GOT hooks when
    # libruby is a shared library, else the NEWOBJ event), :hooks or :tracepoint. `fork:` what a
    # forked child does with the objects tracked before the fork: :keep them (a preforking
    # server's workers see what the app loaded) or :reset to start empty.
    def start(mechanism: :auto, fork: :keep)
      unless MECHANISMS.include?(mechanism)
        raise ArgumentError, "Memprof.start: unknown mechanism #{mechanism.inspect} (expected one of #{MECHANISMS.map(&:inspect).join(', ')})"
      end
      unless FORK_MODES.include?(fork)
        raise ArgumentError, "Memprof.start: unknown fork mode #{fork.inspect} (expected :keep or :reset)"
      end

      Compaction.sync_auto_compact
      Native.reset_on_fork = fork == :reset
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
    # line, class_name), largest group first, to `out`: an IO ($stderr by default) or the path
    # of a file to write. "Live" means not yet freed by the GC: run GC.start first to see only
    # what is still reachable.
    def stats(out = $stderr)
      ensure_started("stats")
      lines = Native.stats_lines
      Output.open(out, "Memprof.stats") { |io| lines.each { |line| io.puts(line) } }
      nil
    end

    # Prints like stats, then forgets every tracked object (tracking goes on).
    def stats!(out = $stderr)
      stats(out)
      Native.clear
      nil
    end

    # Starts tracking, yields, prints stats to `out` (an IO or a path) and stops. Returns the
    # block's value. If the block raises, tracking stops and the exception propagates without
    # stats.
    def track(out = $stderr)
      raise ArgumentError, "Memprof.track needs a block" unless block_given?

      ensure_not_started("track")
      start
      begin
        result = yield
        stats(out)
        result
      ensure
        stop
      end
    end

    # Profiles the block: objects and bytes it allocated, and those retained (still reachable
    # after a full GC at its end), as a Memprof::Report. GC is disabled while the block runs, as
    # memory_profiler does, so that every object it allocates can be measured at its end. The
    # block's value is dropped before that GC, as memory_profiler drops it.
    def report
      raise ArgumentError, "Memprof.report needs a block" unless block_given?

      profile { yield; nil }
    end

    # Memprof.dump(obj, out = $stdout): one object as a JSON line (ObjectSpace.dump's format),
    # with "file" and "line" of its allocation when memprof tracked it.
    # Memprof.dump(out = $stdout) { ... }: every object the block allocated, one line each (GC
    # is disabled while the block runs, so temporaries are there too); returns the block's value.
    # `out` is an IO or the path of a file to write.
    def dump(*args, &block)
      return dump_block(*args, &block) if block

      unless (1..2).cover?(args.size)
        raise ArgumentError, "Memprof.dump(obj, out = $stdout), or Memprof.dump(out = $stdout) { ... }"
      end

      obj, out = args
      require "objspace"
      line = Native.annotate_object_line(obj, ObjectSpace.dump(obj).chomp)
      Output.open(out || $stdout, "Memprof.dump") { |io| io.puts(line) }
      nil
    end

    # Writes a heap dump in ObjectSpace.dump_all's JSON-lines format, with "file" and "line" of
    # allocation on every object memprof tracked, to `target`: a path (String or Pathname),
    # replaced only once the dump is complete, or an IO. Returns `target`.
    def dump_all(target)
      # (Not `require` when loaded: the attach agent dumps from a forked child in trap context,
      # where rubygems' require raises.)
      require "objspace" unless ObjectSpace.respond_to?(:dump_all)
      Output.replace(target, "Memprof.dump_all") do |annotated_path|
        Output.scratch_file(annotated_path, "raw", "Memprof.dump_all") do |raw|
          gc_was_disabled = GC.disable
          begin
            # With GC off and no sweep pending (prune finishes it), no tracked object can be
            # freed and its slot reused between the dump and the annotation.
            Native.prune
            File.open(raw, "w") { |f| ObjectSpace.dump_all(output: f) }
            Native.annotate_dump_file(raw, annotated_path)
          ensure
            GC.enable unless gc_was_disabled
          end
        end
      end
      target
    end

    # Memory and table counters of the current session (entries, table_bytes, sites, ...).
    def info
      Native.info
    end

    private

    # Memprof.report's engine. The block returns the objects its caller keeps on purpose (the
    # Rack middleware's response), which are left out of "retained", or nil.
    def profile(&block)
      ensure_not_started("report")
      Compaction.sync_auto_compact
      allocated, retained = Native.report(&block)
      Report.new(allocated, retained)
    end

    def dump_block(out = $stdout)
      ensure_not_started("dump")
      require "objspace"
      Output.open(out, "Memprof.dump") do |io|
        gc_was_disabled = GC.disable
        begin
          start
          begin
            result = yield
            Native.tracked_objects.each do |obj|
              io.puts(Native.annotate_object_line(obj, ObjectSpace.dump(obj).chomp))
            end
            result
          ensure
            stop
          end
        ensure
          GC.enable unless gc_was_disabled
        end
      end
    end

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
