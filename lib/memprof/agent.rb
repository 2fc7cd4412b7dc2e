# frozen_string_literal: true

module Memprof
  # The Ruby half of the attach agent (src/agent): `memprof attach`, `stats`, `top`, `leaks`,
  # `dump` and `detach` reach a running process through the agent's socket. The agent starts
  # one Ruby thread, "memprof-agent", which runs Agent.serve: requests come through a pipe and
  # the replies go back through another (src/agent/ruby_service.h). Replies are JSON, written
  # here without the json library so that attaching loads nothing into the app beyond memprof.
  module Agent
    class << self
      # Serves the agent until it says "quit". Frames: a 4-byte little-endian length, then
      # "ID\nCOMMAND"; replies "ID\nok\nJSON" or "ID\nerror\nMESSAGE". The first reply, ID 0,
      # says that memprof is loaded.
      def serve(requests, replies)
        Native.ignore_this_thread
        write_frame(replies, "0\nok\n{}")
        own_allocations = 0
        while (payload = read_frame(requests))
          # Ruby counts the objects this thread makes while it answers with the app's: keep
          # them out of what `top` reads as the app's allocations. The request's String (made by
          # read_frame) is the first; the app's threads do not run while this one answers unless
          # it waits for the reply's pipe or its time slice (12 ms at priority -3) ends.
          @app_allocations = GC.stat(:total_allocated_objects) - 1 - own_allocations
          id, command = payload.split("\n", 2)
          reply =
            begin
              command == "quit" ? "ok\n{}" : "ok\n#{handle(command)}"
            rescue Exception => e # rubocop:disable Lint/RescueException -- nothing may escape into the app
              "error\n#{error_text(e)}"
            end
          write_frame(replies, "#{id}\n#{reply}")
          break if command == "quit"

          own_allocations = GC.stat(:total_allocated_objects) - @app_allocations
        end
      end

      # One command, as JSON; raises on failure.
      def handle(command)
        verb, argument = command.split(" ", 2)
        reply =
          case verb
          when "start" then start
          when "status" then status
          when "stats" then stats(Integer(argument || "0"))
          when "groups" then groups(argument)
          when "stop" then stop
          when "dump" then dump(argument)
          when "report-begin" then report_begin(argument && Integer(argument))
          when "report-end" then report_end(Integer(argument || "50"))
          else raise ArgumentError, "unknown command #{verb.inspect}"
          end
        JSONText.generate(reply)
      end

      # The command of a child the agent forked (src/agent/ruby_calls.cc): its JSON, or "error\n"
      # and the words `serve` would reply with.
      def handle_forked(command)
        handle(command)
      rescue Exception => e # rubocop:disable Lint/RescueException -- the child must answer
        "error\n#{error_text(e)}"
      end

      # Called by the agent in this process after it killed the forked child `pid` that ran
      # `command` (it made no progress): removes what the child left behind, the scratch files
      # of a dump (Output.replace's "partial" beside the path, dump_all's "raw" beside that).
      def clean_up_after(command, pid)
        verb, path = command.split(" ", 2)
        return unless verb == "dump" && path

        Output.dump_scratch_files(path, pid, pid).each { |scratch| File.unlink(scratch) if File.exist?(scratch) }
      end

      private

      # memprof's own errors (and a bad argument) say what went wrong for the user to read, a
      # failed system call what it was doing first ("Memprof.dump_all: cannot write /x (No such
      # file or directory)"); any other exception is a failure of the agent, named with its class.
      def error_text(error)
        case error
        when Memprof::Error, ArgumentError then error.message
        when SystemCallError
          reason, doing = error.message.split(" - ", 2)
          doing ? "#{doing} (#{reason})" : error.message
        else "#{error.class}: #{error.message}"
        end
      end

      MAX_REQUEST_BYTES = 1024 * 1024 # the agent sends at most 64 KiB (src/agent/protocol.h)

      # Not IO#read: see src/ruby/frame_reader.h (GC.compact can move the String Ruby reads into
      # while it waits without the GVL).
      def read_frame(io)
        Native.read_frame(io.fileno, MAX_REQUEST_BYTES)
      end

      # With the GVL held while the pipe has room: a blocking write gives the GVL up, and
      # getting it back means waiting for a turn behind every busy thread of the app (100 ms
      # each), a cost paid on every request.
      def write_frame(io, payload)
        data = [payload.bytesize].pack("V") + payload.b
        until data.empty?
          written = io.write_nonblock(data, exception: false)
          if written == :wait_writable
            IO.select(nil, [io])
          else
            data = data.byteslice(written..)
          end
        end
      end

      def start
        started = Memprof.start
        # What attach started, detach stops; tracking the app started itself stays the app's.
        @agent_session = Memprof.send(:tracking_session) if started
        status.merge("started" => started)
      end

      def stop
        session = Memprof.send(:tracking_session)
        if session && (session == @agent_session || session == memprof_run_session)
          @agent_session = nil
          return { "stopped" => Memprof.stop }
        end
        return { "stopped" => false } unless Memprof.started?

        { "stopped" => false, "kept" => "the process's own tracking (Memprof.start)" }
      end

      # The session `memprof run` started (lib/memprof/autostart.rb), or nil.
      def memprof_run_session
        Memprof::Autostart.session if defined?(Memprof::Autostart)
      end

      def status
        info = Memprof.info
        {
          "pid" => Process.pid, "ruby" => RUBY_VERSION, "active" => Memprof.started?,
          "mechanism" => info[:mechanism]&.to_s, "fallback_reason" => info[:fallback_reason],
          "hooked_slots" => info[:hooked_slots], "hooked_call_sites" => info[:hooked_call_sites],
          "entries" => info[:entries], "table_bytes" => info[:table_bytes] + info[:site_bytes],
          "ractors" => Ractor.count
        }
      end

      # memprof loaded without tracking (`memprof dump` of a process never attached): stats, top
      # and leaks showed empty tables, which looked like a process that allocates nothing.
      def require_tracking
        return if Memprof.started?

        raise NotStartedError, "tracking is not started (memprof dump loads memprof without it): run memprof attach first"
      end

      def stats(top)
        require_tracking
        lines = Native.stats_lines
        lines = lines.first(top) if top.positive?
        note = LostObjects.note
        note ? { "lines" => lines, "note" => note } : { "lines" => lines }
      end

      # Live tracked objects by site and class, for `top`, `leaks` and `stats --json`/`--children`:
      # the CLI computes rates and growth between two of these. total_allocated is Ruby's own
      # counter of every object allocated since boot, less those memprof made answering (see
      # serve). "groups gc" (leaks) collects the garbage first: growth between readings must not
      # be garbage that no GC has swept yet. "groups note" (stats) adds LostObjects' note, which
      # is said once: `top`, which reads every second, leaves it to the read-out that shows it.
      def groups(argument)
        words = argument.to_s.split
        unless (words - %w[gc note]).empty?
          raise ArgumentError, "groups takes \"gc\" and \"note\", not #{argument.inspect}"
        end

        require_tracking
        GC.start if words.include?("gc")
        rows = Native.live_groups
        reply = {
          "time" => Process.clock_gettime(Process::CLOCK_MONOTONIC),
          "total_allocated" => @app_allocations || GC.stat(:total_allocated_objects),
          "gc_count" => GC.count,
          "groups" => rows
        }
        note = LostObjects.note if words.include?("note")
        note ? reply.merge("note" => note) : reply
      end

      # `memprof report -p PID --duration`: a window of the running process (its GC keeps
      # running), closed by report-end, which prints it as Memprof.report does. `owner`: the pid
      # of the memprof that opens it. A second report would end the first one's window and take
      # its results: refused while that memprof lives (one killed before it closed its window
      # leaves it to the next).
      def report_begin(owner)
        if @window_owner && @window_owner != owner && process_alive?(@window_owner)
          raise Error, "a report window is already open in this process (memprof report, pid " \
                       "#{@window_owner}): run this one when it has closed"
        end
        require_tracking
        Native.window_begin
        @window_owner = owner
        @window_opened_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        { "open" => true }
      end

      def process_alive?(pid)
        Process.kill(0, pid)
        true
      rescue Errno::ESRCH
        false
      rescue Errno::EPERM
        true
      end

      def report_end(top)
        closing = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @window_owner = nil
        allocated, retained = Native.window_end
        report = Report.new(allocated, retained)
        {
          "seconds" => closing - (@window_opened_at || closing),
          "closing_pause_ms" => (Process.clock_gettime(Process::CLOCK_MONOTONIC) - closing) * 1000.0,
          "text" => report.text(top: top), "report" => report.to_h
        }
      end

      def dump(path)
        raise ArgumentError, "dump needs a path" if path.nil? || path.empty?

        Memprof.dump_all(path)
        { "path" => path, "bytes" => File.size(path) }
      end
    end

    # JSON for the agent's replies: Hash, Array, String, Symbol, Integer, Float, true, false,
    # nil. Strings that are not valid UTF-8 (file names are bytes) are scrubbed.
    module JSONText
      ESCAPES = { '"' => '\\"', "\\" => "\\\\", "\n" => "\\n", "\r" => "\\r", "\t" => "\\t" }.freeze

      def self.generate(value, out = +"")
        case value
        when Hash
          out << "{"
          value.each_with_index do |(key, item), i|
            out << "," if i.positive?
            string(key.to_s, out) << ":"
            generate(item, out)
          end
          out << "}"
        when Array
          out << "["
          value.each_with_index do |item, i|
            out << "," if i.positive?
            generate(item, out)
          end
          out << "]"
        when String, Symbol then string(value.to_s, out)
        when Integer then out << value.to_s
        when Float then out << (value.finite? ? value.to_s : "null")
        when true then out << "true"
        when false then out << "false"
        else out << "null"
        end
      end

      def self.string(text, out)
        text = text.dup.force_encoding(Encoding::UTF_8).scrub("\uFFFD")
        escaped = text.gsub(/["\\\x00-\x1f]/) { |c| ESCAPES[c] || format("\\u%04x", c.ord) }
        out << '"' << escaped << '"'
      end
    end
  end
end
