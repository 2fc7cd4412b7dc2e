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
begin
  require(Memprof.instance_variable_get(:@agent_extension) || "memprof/memprof")
rescue LoadError => e
  raise if Memprof.instance_variable_get(:@agent_extension)

  # The checkout's lib/memprof/memprof.so is built for the Ruby `make` found: another Ruby
  # failed with "linked to incompatible libruby-3.1.so".
  raise LoadError, "memprof's extension does not load into this Ruby (#{RUBY_VERSION}): " \
                   "#{e.message}; it is built for one Ruby: gem build memprof.gemspec && " \
                   "gem install memprof-*.gem with this Ruby builds it for this one"
end
# With memprof, not when first used: Memprof.dump and dump_all run in trap context (a USR2 handler,
# the attach agent's forked child), where rubygems' require raises, and objects a require makes
# after Memprof.start would be charged to the app. (An extension of Ruby's, not a gem: loading it
# reads no gem specification.)
require "objspace"
require_relative "memprof/report"
require_relative "memprof/child_dump"
require_relative "memprof/compaction"
require_relative "memprof/lost_objects"
require_relative "memprof/output"
require_relative "memprof/ractors"

module Memprof
  autoload :Middleware, File.expand_path("memprof/middleware", __dir__)

  # Objects allocated by the gem's own Ruby code are tracked but never reported.
  Native.ignore_path_prefix(File.expand_path("memprof.rb", __dir__))
  Native.ignore_path_prefix(File.expand_path("memprof", __dir__) + File::SEPARATOR)

  MECHANISMS = %i[auto hooks tracepoint].freeze
  FORK_MODES = %i[keep reset].freeze

  # One tracker per process: the checks and the state changes of start, stop, track, report and
  # dump { } run under this lock, so that two threads cannot both find tracking off and both
  # start it (starting releases the GVL while it decodes libruby). It is never held while a
  # user's block runs: a second report must fail at once, not wait for the first one's block.
  @lock = Thread::Mutex.new
  # "track", "report" or "dump" while that block runs (its tracking is the block's own), and
  # the thread and process running it: a child forked inside the block runs no block of its own.
  @block_session = nil
  @block_session_thread = nil
  @block_session_pid = nil

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

      exclusively("Memprof.start") { start_tracking(mechanism, fork) }
    end

    # Stops tracking and forgets what was tracked. Returns true, or false when it was off.
    # Raises Memprof::Error while a track, report or dump block runs (in any thread): its
    # tracking ends with the block.
    def stop
      exclusively("Memprof.stop") do
        refuse_inside_block_session("stop")
        @tracking_session = nil
        Native.stop
      end
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
      print_stats(out, "stats")
    end

    # Prints like stats, then forgets every tracked object (tracking goes on). Raises
    # Memprof::Error while a track, report or dump block runs: it would empty what the block
    # measures.
    def stats!(out = $stderr)
      refuse_inside_block_session("stats!")
      print_stats(out, "stats!")
      Native.clear
      nil
    end

    # Starts tracking, yields, prints stats to `out` (an IO or a path) and stops. Returns the
    # block's value. If the block raises, tracking stops and the exception propagates without
    # stats.
    def track(out = $stderr)
      raise ArgumentError, "Memprof.track needs a block" unless block_given?

      # Before the block: a path that cannot be written would lose the block's results after it.
      Output.check_writable(out, "Memprof.track")
      begin_block_session("track") { start_tracking(:auto, :keep) }
      begin
        result = yield
        print_stats(out, "track")
        result
      ensure
        end_block_session("track") { Native.stop }
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
      line = Native.annotate_object_line(obj, ObjectSpace.dump(obj).chomp)
      Output.open(out || $stdout, "Memprof.dump") { |io| io.puts(line) }
      nil
    end

    # Writes a heap dump in ObjectSpace.dump_all's JSON-lines format, with "file" and "line" of
    # allocation on every object memprof tracked, to `target`: a path (String or Pathname),
    # replaced only once the dump is complete, or an IO. Returns `target`.
    # The objects the call makes itself (its File, its paths, ...) are marked "memprof_own" in
    # the dump, and `memprof diff` leaves them out.
    # Beside other threads the dump is written by a forked child (ChildDump); a child asleep for
    # `stall_timeout` seconds with no CPU time and no I/O (hung: on a lock that another thread
    # held at the fork) is killed and Memprof::Error raised. nil: no limit. A child writing into
    # a FIFO, device or socket waits for its reader as long as it takes, as this process would.
    def dump_all(target, stall_timeout: 30)
      unless stall_timeout.nil? || seconds?(stall_timeout)
        raise ArgumentError, "Memprof.dump_all: stall_timeout must be a positive number of seconds or nil, " \
                             "not #{stall_timeout.inspect}"
      end

      Native.own_objects_begin
      begin
        without_auto_compaction { write_dump_all(target, stall_timeout) }
      ensure
        Native.own_objects_end
      end
      target
    end

    # Memory and table counters of the current session (entries, table_bytes, sites, ...).
    def info
      Native.info
    end

    private

    # How many times dump_all writes the dump again when a compaction moved objects meanwhile.
    DUMP_TRIES = 3

    # Where other threads would run during it, the whole of it -- scratch files, dump, annotation,
    # rename -- is done by a forked child (ChildDump). An IO is this process's: the dump is
    # written to a scratch file, then copied into it here.
    def write_dump_all(target, stall_timeout)
      if Output.io?(target)
        return Output.replace(target, "Memprof.dump_all") { |file| write_dump_all(file, stall_timeout) }
      end

      stall_timeout = nil if Output.written_into?(target, "Memprof.dump_all")
      leftovers = ->(child) { Output.dump_scratch_files(target, Native.getpid, child) }
      ChildDump.run(leftovers: leftovers, stall_timeout: stall_timeout) do
        Output.replace(target, "Memprof.dump_all") do |annotated_path|
          Output.scratch_file(annotated_path, "raw", "Memprof.dump_all") do |raw|
            write_annotated_dump(raw, annotated_path)
          end
        end
      end
    end

    # Written in this process, GC stays on: other threads may run between its steps (opening
    # the file, the annotation; and during its writes on Ruby 3.1-3.3), and with GC off their
    # garbage would pile up meanwhile. What a slot holds changes only through a collection, so
    # the annotation keeps to the objects alive since before the dump
    # (Native.annotate_dump_file). Compaction moves objects without freeing them: it is held off
    # (auto_compact) and an explicit GC.compact meanwhile means the dump is written again.
    # (Counted by Compaction: GC.stat(:compact_count) allocates 26 Strings on Ruby 3.1, which
    # the app's stats would show.)
    def write_annotated_dump(raw, annotated_path)
      DUMP_TRIES.times do
        compactions = Compaction.count
        Native.prune # finishes any lazy sweep: from here, slots are freed by new collections
        last_gc = GC.count
        File.open(raw, "w") { |f| ObjectSpace.dump_all(output: f) }
        next unless Compaction.count == compactions

        return Native.annotate_dump_file(raw, annotated_path, last_gc)
      end
      raise Error, "Memprof.dump_all: GC.compact moved objects during each of #{DUMP_TRIES} dumps"
    end

    def seconds?(value)
      value.is_a?(Numeric) && value.real? && value.positive? && value.finite?
    end

    def without_auto_compaction
      return yield unless GC.respond_to?(:auto_compact) && GC.auto_compact

      GC.auto_compact = false
      begin
        yield
      ensure
        GC.auto_compact = true
      end
    end

    def start_tracking(mechanism, fork)
      Compaction.sync_auto_compact
      Native.reset_on_fork = fork == :reset
      started = Native.start(mechanism)
      @tracking_sessions = (@tracking_sessions || 0) + 1 if started
      @tracking_session = @tracking_sessions if started
      started
    end

    # The number of the tracking session Memprof.start started and that still runs, or nil:
    # memprof's agent and `memprof run` note the one they start, and detach stops only that one
    # (an app that stopped it and started its own keeps its own).
    def tracking_session
      @tracking_session if Native.active?
    end

    # Memprof.report's engine. The block returns the objects its caller keeps on purpose (the
    # Rack middleware's response), which are left out of "retained", or nil.
    #
    # Native.report starts tracking, calls the block and stops, all in one call (the block must
    # be called from the extension: docs/ruby.md, retained). So the lock is taken before it,
    # released once the block is entered (tracking is on: another thread's report now fails
    # fast), and taken again when the block leaves, for the stop.
    def profile(&block)
      lock_for("Memprof.report")
      begin
        ensure_not_started("report")
        Compaction.sync_auto_compact
        allocated, retained = Native.report do
          @block_session = "report"
          @block_session_thread = Thread.current
          @block_session_pid = Process.pid
          @lock.unlock
          begin
            block.call
          ensure
            lock_for("Memprof.report")
            @block_session = nil
          end
        end
      ensure
        # (Not held only if the thread was killed while waiting for it at the block's end.)
        @lock.unlock if @lock.owned?
      end
      Report.new(allocated, retained)
    end

    def dump_block(out = $stdout)
      # Started before the output is opened, so that a dump refused while tracking is on leaves
      # an existing file alone.
      begin_block_session("dump") { start_tracking(:auto, :keep) }
      begin
        Output.open(out, "Memprof.dump") do |io|
          gc_was_disabled = GC.disable
          begin
            result = yield
            Native.tracked_objects.each do |obj|
              io.puts(Native.annotate_object_line(obj, ObjectSpace.dump(obj).chomp))
            end
            result
          ensure
            GC.enable unless gc_was_disabled
          end
        end
      ensure
        end_block_session("dump") { Native.stop }
      end
    end

    # Runs the block holding the lock.
    def exclusively(api)
      lock_for(api)
      begin
        yield
      ensure
        @lock.unlock
      end
    end

    # A signal handler may not wait for a Mutex (Ruby raises ThreadError there: the code it
    # interrupted may hold it), and trap("USR1") { Memprof.start } is memprof's classic use; so
    # the lock is tried first, which Ruby allows there, and is waited for only elsewhere.
    def lock_for(api)
      return if @lock.try_lock

      @lock.lock
    rescue ThreadError
      raise Error, "#{api}: memprof is being started or stopped by the code this signal handler (or finalizer) interrupted; try again later"
    end

    # Starts tracking (the block) for the block API `what` under the lock, or raises
    # AlreadyStartedError when it is on.
    def begin_block_session(what)
      exclusively("Memprof.#{what}") do
        ensure_not_started(what)
        yield
        @block_session = what
        @block_session_thread = Thread.current
        @block_session_pid = Process.pid
      end
    end

    def end_block_session(what)
      exclusively("Memprof.#{what}") do
        @block_session = nil
        yield
      end
    end

    def refuse_inside_block_session(what)
      session = @block_session
      # In a forked child the block is the parent's: the child may stop the tracking it inherited.
      return unless session && @block_session_pid == Process.pid && @block_session_thread.alive?

      raise Error, "Memprof.#{what}: a Memprof.#{session} block is running, and its tracking is that block's (it stops when the block ends)"
    end

    # Runs the block (Ractor.new) unless tracking goes through the NEWOBJ event: see Ractors.
    def refusing_ractors_under_newobj_event
      exclusively("Ractor.new") do
        if Native.mechanism == :tracepoint
          raise Error, "Ractor.new: memprof is tracking through Ruby's NEWOBJ event (mechanism :tracepoint), which Ruby fires only in the main Ractor (and Ruby 3.1 crashes when another Ractor allocates under it): stop tracking first, or track with the hooks (Memprof.start(mechanism: :hooks))"
        end

        yield
      end
    end

    def print_stats(out, what)
      ensure_started(what)
      lines = Native.stats_lines
      Output.open(out, "Memprof.#{what}") { |io| lines.each { |line| io.puts(line) } }
      note = LostObjects.note
      warn "memprof: Memprof.#{what}: #{note}" if note
      nil
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
