# frozen_string_literal: true

# The commands around attaching (issue 10, items 4, 6 and 7): the errors a user meets first,
# `memprof run` and `memprof dump -p`.
require_relative "attach_helper"

class AttachCliTest < Minitest::Test
  include AttachTestHelper

  def assert_one_line_error(args, pattern)
    out, err, status = memprof(*args)
    assert_equal 1, status.exitstatus, "memprof #{args.join(' ')}: #{out}#{err}"
    assert_empty out
    assert_equal 1, err.lines.size, "not one line: #{err}"
    assert_match pattern, err
  end

  # A script in the test's directory whose String counts are exact: frozen literals, and the
  # String.new that Ruby 3.1 counts once on its first call made before `body`.
  def counted_script(name, body)
    path = File.join(@tmpdir, name)
    File.write(path, <<~RUBY + body)
      # frozen_string_literal: true
      $stdout.sync = true
      String.new("warm-up") # (Ruby 3.1's first String.new interns its keyword names)
    RUBY
    path
  end

  def test_stats_of_a_process_not_attached_says_to_attach
    target = spawn_target("target.rb", "sleep")
    target.wait_for(/\Aready #{target.pid}\z/)
    %w[stats top leaks detach].each do |command|
      extra = { "top" => ["--once"] }.fetch(command, [])
      assert_one_line_error([command, "-p", target.pid, *extra],
                            /no memprof agent in process #{target.pid}.*memprof attach -p #{target.pid}/)
    end
    assert_alive(target)
  end

  # A heap dump needs the gem's code, not its tracking: `dump` of a process never attached
  # loads memprof without tracking and writes it (before: "no memprof agent ... run memprof
  # attach", and a user had to track, dump and detach). Its objects have no sites; stats, top,
  # leaks and report say that nothing is tracked instead of showing empty tables.
  def test_dump_of_a_process_never_attached_loads_memprof_without_tracking
    target = ruby_job_target(<<~'RUBY')
      Widget = Struct.new(:id)
      $widgets = Array.new(1234) { |i| Widget.new(i) }
      puts "made widgets"
      $stdin.each_line { |line| break if line.strip == "finish" }
    RUBY
    target.wait_for(/\Amade widgets\z/)
    dump = File.join(@tmpdir, "heap.json")
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump)
    assert status.success?, err
    assert_match(/\Awrote #{Regexp.escape(dump)} /, out)
    assert_equal "memprof: loaded memprof into process #{target.pid} for the dump, without tracking: its objects " \
                 "have no allocation sites (after memprof attach -p #{target.pid}, a dump names the file and line " \
                 "of every object allocated since)\n", err
    widgets = JSON.parse(memprof!("analyze", "--json", "--top", "100000", dump))["by_class"].find { |row| row["name"] == "Widget" }
    assert_equal 1234, widgets&.fetch("count"), "no 1,234 Widgets in the dump"
    refute File.foreach(dump).any? { |record| record.include?(%("file":"#{target.script}")) }, "a site without tracking"
    # A second dump loads nothing more.
    _, err, status = memprof("dump", "-p", target.pid, "-o", dump)
    assert [status.success?, err] == [true, ""], err
    %w[stats top leaks report].each do |command|
      extra = { "top" => ["--once"], "report" => ["--duration", "0.1s"] }.fetch(command, [])
      assert_one_line_error([command, "-p", target.pid, *extra],
                            /\Amemprof: process #{target.pid}: tracking is not started \(memprof dump loads memprof without it\): run memprof attach first\n\z/)
    end
    # `ps` says the same (before: "tracking", from the gem being loaded), and so does `detach`
    # (before: "hooks removed").
    assert_equal "gem loaded", ps_state(target)
    assert_equal "detached from process #{target.pid}: agent stopped (nothing was tracked; every byte it " \
                 "patched is restored)\n", memprof!("detach", "-p", target.pid)
    attach!(target)
    assert_equal "tracking", ps_state(target)
    detach_and_finish!(target)
  end

  # The STATE column of `memprof ps` for `target`, and the same from --json's hello.
  def ps_state(target)
    row = memprof!("ps").lines.find { |line| line.split.first == target.pid.to_s }
    entry = JSON.parse(memprof!("ps", "--json")).find { |process| process["pid"] == target.pid }
    state = row&.slice(20, 10)&.strip
    assert_equal state == "tracking", entry&.dig("agent", "tracking"), "ps --json disagrees with ps: #{entry.inspect}"
    state
  end

  # A thread's id (top -H, a log line) is not its process's id. Before, stats and the other
  # commands that talk to the agent said there was no agent "in process TID" and to attach it.
  def test_a_thread_id_is_named_as_a_thread_of_its_process
    target = threads_target("Thread.new { sleep }")
    attach!(target)
    thread = Dir.children("/proc/#{target.pid}/task").map { |tid| Integer(tid) }.find { |tid| tid != target.pid }
    refute_nil thread
    %w[stats top leaks dump detach report].each do |command|
      extra = { "top" => ["--once"], "dump" => ["-o", File.join(@tmpdir, "x.json")] }.fetch(command, [])
      assert_one_line_error([command, "-p", thread, *extra],
                            /\Amemprof: #{thread} is a thread of process #{target.pid}; give the process id #{target.pid} instead\n\z/)
    end
    detach!(target)
  end

  # Right after an attach nothing is tracked yet: stats printed nothing at all, which looked
  # like a broken command. It says why on stderr; stdout stays the (empty) list of lines.
  def test_stats_of_a_process_with_nothing_tracked_says_why
    target = threads_target("")
    attach!(target)
    target_pid = target.pid
    out, err, status = memprof("stats", "-p", target_pid)
    assert_equal [0, ""], [status.exitstatus, out], err
    assert_equal "memprof: no live tracked objects in process #{target_pid}: memprof tracks what is " \
                 "allocated after `memprof attach` (what was made before is in `memprof dump -p #{target_pid}`)\n", err
    assert_equal "{\"pid\":#{target_pid},\"groups\":[],\"notes\":[],\"left_out\":[]}\n",
                 memprof!("stats", "-p", target_pid, "--json")
    detach!(target)
  end

  def test_attach_to_a_process_that_is_not_ruby
    target = spawn_target(command: ["sleep", "600"])
    assert_one_line_error(["attach", "-p", target.pid], /process #{target.pid} \(sleep\) is not running Ruby/)
    assert_alive(target)
    # Nothing was loaded into it.
    refute_match(/memprof/, File.read("/proc/#{target.pid}/maps"))
  end

  def test_no_such_process
    # A pid that was ours a moment ago and is reaped now.
    pid = Process.spawn("true")
    Process.wait(pid)
    # Every command with -p, said the same way (dump added a child "it had forked": it forked none).
    extra = { "top" => ["--once"], "dump" => ["-o", File.join(@tmpdir, "x.json")], "trace" => ["-x", "malloc"] }
    %w[attach stats detach top leaks report dump trace native].each do |command|
      assert_one_line_error([command, "-p", pid, *extra.fetch(command, [])], /no such process:? #{pid}\n\z/)
    end
  end

  # A stopped process cannot answer: its agent's thread is stopped too. Refused at once, as
  # attach refuses it, instead of waiting out the 90 s reply timeout (stats) or for ever (detach).
  def test_requests_to_a_stopped_process_are_refused_at_once
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    Process.kill("STOP", target.pid)
    begin
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      %w[stats detach].each do |command|
        assert_one_line_error([command, "-p", target.pid],
                              /\Amemprof: process #{target.pid} is stopped \(SIGSTOP\); resume it with kill -CONT #{target.pid}\n\z/)
      end
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 10
    ensure
      Process.kill("CONT", target.pid)
    end
    detach!(target)
  end

  # A request that Ruby must run waits for the main thread to leave a long call in C that holds
  # the GVL; after 3 s without a reply memprof says so (before: silence until the call ended,
  # 11 s in one run, or until the agent gave up).
  def test_a_request_kept_waiting_by_a_long_call_holding_the_gvl_says_so
    target = ruby_job_target(<<~'RUBY')
      require "fiddle"
      hold = Fiddle::Function.new(Fiddle.dlopen(ENV.fetch("HOLD_CPU_LIBRARY"))["hold_cpu_ms"],
                                  [Fiddle::TYPE_INT], Fiddle::TYPE_VOID, need_gvl: true)
      while (line = $stdin.gets)
        puts "holding"
        hold.call(Integer(line))
        puts "held"
      end
    RUBY
    attach!(target)
    # 6 s: a request that starts in its first 3 s is answered after the note.
    target.send_line("6000")
    target.wait_for(/\Aholding\z/)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    out, err, status = memprof("stats", "-p", target.pid)
    assert status.success?, err
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 3
    assert_match(/:String$/, out)
    assert_equal "memprof: process #{target.pid} has not answered in 3 s: Ruby runs memprof's request between " \
                 "two steps of Ruby code, and its main thread may be in a long call that holds the GVL (C code, " \
                 "a C extension); still waiting\n", err
    target.wait_for(/\Aheld\z/)
    # A prompt answer says nothing.
    _, err, status = memprof("stats", "-p", target.pid)
    assert_equal [true, ""], [status.success?, err]
    detach!(target)
  end

  # Stopped while a request waits for its reply (here a dump whose child hangs; also a SIGSTOP
  # not yet delivered when the request checked): said within a second or so, not after the
  # reply timeout (30 minutes for a dump).
  def test_a_process_stopped_during_a_request_is_said_to_be
    target = hung_dump_target
    request, _, dump_children = dump_in_background(target, "--stall-timeout", "600")
    Process.kill("STOP", target.pid)
    stopped = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    out, err, status = request.value
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - stopped, :<, 10
    assert_equal [1, "", "memprof: process #{target.pid} is stopped (SIGSTOP); resume it with kill -CONT #{target.pid}\n"],
                 [status.exitstatus, out, err]
  ensure
    Process.kill("CONT", target.pid)
    kill_children(dump_children)  # the hung dump child: the agent kills it only after --stall-timeout
  end

  def test_run_tracks_from_the_start_and_keeps_the_exit_status
    script = counted_script("app.rb", <<~RUBY)
      $early = Array.new(1000) { String.new("early") } # MARK: early
      $stdout.puts "up \#{Process.pid}"
      $stdin.gets
      $late = Array.new(2000) { String.new("late") } # MARK: late
      $stdout.puts "late done"
      $stdin.gets
      exit 7
    RUBY
    run = spawn_target(command: [MEMPROF, "run", "--", RbConfig.ruby, script])
    ruby_pid = Integer(run.wait_for(/\Aup \d+\z/).split.last)
    refute_equal run.pid, ruby_pid
    early = "#{script}:#{marked_line(script, 'early')}:String"
    late = "#{script}:#{marked_line(script, 'late')}:String"
    # `memprof run` starts tracking once Ruby has booted: wait until it has.
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    loop do
      _, err, status = memprof("stats", "-p", ruby_pid)
      break if status.success? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      $stderr.puts "waiting: #{err}" if ENV["MEMPROF_TEST_VERBOSE"]
      sleep 0.05
    end
    run.send_line("go")
    run.wait_for(/\Alate done\z/)
    stats = live_stats(ruby_pid)
    assert_equal 2000, stats[late], stats.inspect
    assert_equal 1000, stats[early], "the script's first objects were not tracked: #{stats.inspect}"
    socket = "/tmp/memprof-#{Process.uid}/#{ruby_pid}.sock"
    assert File.socket?(socket)
    run.send_line("exit")
    status = run.wait_exit
    assert_equal 7, status.exitstatus, run.context
    # Removed by exit(), not left for the next sweep.
    refute File.exist?(socket), "#{socket} outlived its process"
  end

  # `memprof run` started the tracking, so detach stops it as it does an attach's. Before:
  # "the process's own tracking (Memprof.start) left on", and a re-attach found it running.
  # The program's own `require "memprof"` finds the memprof run loaded (before: LoadError).
  def test_detach_stops_the_tracking_memprof_run_started
    script = File.join(@tmpdir, "app.rb")
    File.write(script, <<~RUBY)
      $stdout.sync = true
      loaded = require "memprof"
      $stdout.puts "up \#{Process.pid} \#{loaded} \#{Memprof.started?}"
      $stdin.gets
      $stdout.puts "started \#{Memprof.started?}"
    RUBY
    run = spawn_target(command: [MEMPROF, "run", "--", RbConfig.ruby, script])
    ruby_pid = Integer(run.wait_for(/\Aup \d+ false true\z/).split[1])
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    sleep 0.05 until memprof("stats", "-p", ruby_pid)[2].success? ||
                     Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    out = detach!(ruby_pid)
    assert_match(/hooks removed, patched bytes restored, agent stopped/, out)
    out = memprof!("attach", "-p", ruby_pid)
    assert_match(/^tracking process #{ruby_pid}: hooks on [1-9]\d* GOT slots? and \d+ call sites?$/, out)
    refute_match(/\b1 (GOT slots|call sites)\b/, out) # Debian's 3.1 has one call site: not "1 call sites"
    detach!(ruby_pid)
    run.send_line("")
    run.wait_for(/\Astarted false\z/)
    assert run.wait_exit.success?, run.context
  end

  # A program that stops the tracking `memprof run` started and starts its own keeps its own at
  # detach. Before: run's session was a flag the program's Memprof.stop did not clear.
  def test_detach_leaves_the_tracking_a_program_restarted_itself
    script = File.join(@tmpdir, "restarts.rb")
    File.write(script, <<~RUBY)
      $stdout.sync = true
      require "memprof"
      $stdout.puts "up \#{Process.pid}"
      $stdin.gets
      Memprof.stop
      Memprof.start
      $stdout.puts "restarted"
      $stdin.gets
      $stdout.puts "started \#{Memprof.started?}"
    RUBY
    run = spawn_target(command: [MEMPROF, "run", "--", RbConfig.ruby, script])
    ruby_pid = Integer(run.wait_for(/\Aup \d+\z/).split.last)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    sleep 0.05 until memprof("stats", "-p", ruby_pid)[2].success? ||
                     Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    run.send_line("restart")
    run.wait_for(/\Arestarted\z/)
    assert_match(/own tracking \(Memprof.start\) left on/, detach!(ruby_pid))
    run.send_line("")
    run.wait_for(/\Astarted true\z/)
    assert run.wait_exit.success?, run.context
  end

  # A process near its ulimit -v (RLIMIT_AS): the agent's libraries, threads and tables took
  # what it had left, and the process died of its own next allocation ("[FATAL] failed to
  # allocate memory", or NoMemoryError in its main thread). attach and trace now refuse before
  # injecting anything, and say how to raise the limit; raised, attach works.
  def test_a_process_near_its_address_space_limit_is_refused_before_injection
    target = ruby_job_target("$stdin.gets\n$kept = Array.new(400) { Object.new }\nputs 'made'\n$stdin.gets")
    mapped = File.read("/proc/#{target.pid}/status")[/^VmSize:\s+(\d+)/, 1].to_i * 1024
    soft = mapped + (16 << 20)
    system("prlimit", "--pid", target.pid.to_s, "--as=#{soft}:", exception: true)
    said = format("memprof: process %<pid>d may map at most %<limit>.1f MB (its ulimit -v, RLIMIT_AS) and has " \
                  "%<mapped>.1f MB mapped: memprof's agent needs about 64.0 MB more, and taking what is left could " \
                  "make the process's own allocations fail; raise its limit (prlimit --pid %<pid>d --as=BYTES, " \
                  "up to its hard limit) or restart it without one\n",
                  pid: target.pid, limit: soft / 1048576.0, mapped: mapped / 1048576.0)
    [%w[attach], %w[trace -x malloc --duration 1s]].each do |command, *rest|
      out, err, status = memprof(command, "-p", target.pid, *rest)
      assert_equal [1, "", said], [status.exitstatus, out, err], command
    end
    refute_includes File.read("/proc/#{target.pid}/maps"), "memprof_agent"
    system("prlimit", "--pid", target.pid.to_s, "--as=unlimited:", exception: true)
    attach!(target)
    target.send_line("go")
    target.wait_for(/\Amade\z/)
    assert_equal 400, live_stats(target.pid).select { |key, _| key.end_with?(":Object") }.values.sum
    detach!(target)
    assert_alive(target)
  end

  # `run --no-track` preloads the agent alone: the commands that read the tracking say it is not
  # on and how to start it (before: "memprof is not loaded", while `ps` listed the agent), and
  # an attach then tracks from that moment.
  def test_run_no_track_loads_the_agent_alone_until_attach
    script = counted_script("later.rb", <<~RUBY)
      $stdout.puts "up \#{Process.pid}"
      while $stdin.gets
        $kept = Array.new(300) { String.new("kept") } # MARK: kept
        $stdout.puts "made"
      end
    RUBY
    run = spawn_target(command: [MEMPROF, "run", "--no-track", "--", RbConfig.ruby, script])
    ruby_pid = Integer(run.wait_for(/\Aup \d+\z/).split.last)
    row = memprof!("ps").lines.find { |line| line.split.first == ruby_pid.to_s }
    assert_equal format("%8d  %-8s  %-10s  ", ruby_pid, RUBY_VERSION, "agent only"), row&.slice(0, 32)
    %w[stats top leaks].each do |command|
      extra = { "top" => ["--once"], "leaks" => ["--rounds", "1", "--interval", "0.1s"] }.fetch(command, [])
      assert_one_line_error([command, "-p", ruby_pid, *extra],
                            /\Amemprof: process #{ruby_pid}: the memprof agent is loaded but does not track Ruby objects .*: run memprof attach first\n\z/)
    end
    assert_match(/^tracking process #{ruby_pid}: /, memprof!("attach", "-p", ruby_pid))
    run.send_line("go")
    run.wait_for(/\Amade\z/)
    assert_equal 300, live_stats(ruby_pid)["#{script}:#{marked_line(script, 'kept')}:String"]
    detach!(ruby_pid)
    run.stdin.close
    assert run.wait_exit.success?, run.context
  end

  # A program the agent cannot be preloaded into runs, and memprof says so at once. Before:
  # nothing was said, and `memprof top -p PID` then failed with "no agent".
  def test_run_says_when_the_agent_cannot_be_preloaded
    _, err, status = memprof("run", "--", ENV.fetch("STATIC_PROGRAM"))
    assert_equal 0, status.exitstatus, err
    assert_match(/\Amemprof: warning: process \d+: the program is statically linked: memprof's agent cannot be preloaded into it; it runs without memprof\n\z/,
                 err)
  end

  # Before: detach stopped the process's own tracking too (its Memprof.stats then raised
  # NotStartedError).
  def test_detach_leaves_the_tracking_a_process_started_itself
    # The gem from this checkout, with the extension built for the Ruby running the test.
    load_path = [ENV["MEMPROF_EXT_DIR"], File.expand_path("../../lib", __dir__)].compact.flat_map { |dir| ["-I", dir] }
    target = spawn_target(command: [RbConfig.ruby, *load_path, File.join(FIXTURES, "self_tracking.rb")])
    target.wait_for(/\Aready #{target.pid}\z/)
    out = memprof!("attach", "-p", target.pid, target: target)
    assert_match(/already tracking process #{target.pid}/, out)
    out = memprof!("detach", "-p", target.pid, target: target)
    assert_match(/own tracking \(Memprof.start\) left on/, out)
    target.send_line("started?")
    target.wait_for(/\Astarted true\z/)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  # An allocation window sums frees through a GC event hook, and Ruby before 3.3 crashes when a
  # Ractor starts while one is on (Ruby bug #18464): a Ractor started during the window turns
  # the hook off, and the report says its counts are incomplete, in the tracker's words (no
  # Ruby class name in front: "Memprof::Error: a Ractor ..." before). From 3.3 on it reports.
  def test_report_window_during_which_a_ractor_starts
    target = ruby_job_target(<<~'RUBY')
      while $stdin.gets
        puts "ractor #{Ractor.new { 6 * 7 }.take}"
      end
    RUBY
    attach!(target)
    report = start_recording("report", "-p", target.pid, "--duration", "60s", ready: "window open for")
    run_job(target, "go", /\Aractor 42\z/)
    Process.kill(:INT, report.pid)
    status = report.wait_exit
    if RUBY_VERSION >= "3.3"
      assert status.success?, report.context
    else
      version = RUBY_VERSION[/\A\d+\.\d+/]
      assert_equal 1, status.exitstatus, report.context
      assert_includes report.stderr_text, "memprof: process #{target.pid}: a Ractor started during the window, and Ruby #{version} crashes when one starts while a GC event hook is on (Ruby bug #18464, fixed in 3.3): memprof stopped watching frees, so the window's counts are incomplete\n"
    end
    run_job(target, "again", /\Aractor 42\z/)
    assert_alive(target)
    detach!(target)
  end

  # A request that comes once Ruby's VM has ended (the process is in exit(), after ruby_cleanup;
  # here an exit handler waits there) is refused, and the process is left to end as it would.
  # Before: the agent posted a job to the freed VM, and the process died of a segfault.
  def test_a_request_after_rubys_vm_ended_is_refused_without_harm
    target = ruby_job_target(<<~'RUBY')
      require "fiddle"
      libc = Fiddle.dlopen(nil)
      on_exit = Fiddle::Function.new(libc["on_exit"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_VOIDP], Fiddle::TYPE_INT)
      on_exit.call(libc["pause"], nil)  # exit() runs it after Ruby's VM is gone: waits for a signal
      $stdin.gets
    RUBY
    attach!(target)
    target.send_line("end")
    syscall = "/proc/#{target.pid}/task/#{target.pid}/syscall"
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    sleep 0.05 until File.read(syscall).start_with?("34 ") || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert File.read(syscall).start_with?("34 "), "the process never reached its exit handler (pause(2))"
    _, err, status = memprof("dump", "-p", target.pid, "-o", File.join(@tmpdir, "late.json"))
    assert_equal [1, "memprof: process #{target.pid}: Ruby's VM has ended in this process (it is exiting)\n"], [status.exitstatus, err]
    assert_alive(target)
  end

  def test_dump_of_an_attached_process_reads_in_analyze
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    target.send_line("alloc")
    target.wait_for(/\Aallocated 10000\z/)
    line = marked_line(target.script, "kept")
    dump = File.join(@tmpdir, "heap.json")
    out = memprof!("dump", "-p", target.pid, "-o", dump, target: target)
    assert_match(/wrote #{Regexp.escape(dump)} .* from a child of process #{target.pid}/, out)

    # The file has the file and line of every tracked object: exactly our 10,000 Strings at
    # that line.
    at_line = File.foreach(dump).count do |record|
      next false unless record.include?(target.script)

      object = JSON.parse(record)
      object["file"] == target.script && object["line"] == line && object["type"] == "STRING"
    end
    assert_equal 10_000, at_line

    out = memprof!("analyze", "--json", dump)
    report = JSON.parse(out)
    assert report.is_a?(Hash)
    assert_includes out, "#{File.basename(target.script)}:#{line}", "analyze names no object at our line"
    assert_alive(target)
    detach_and_finish!(target)
  end

  # The dump is written by a forked child. Threads of the parent that were waiting for the GVL
  # do not exist there, but Ruby 3.3+'s scheduler still hands them the GVL when the child lets
  # go of it (its File.open, its writes): the child must reset Ruby's threads as Ruby's own
  # fork does, or it waits forever for threads that will never run (and `dump` with it).
  def test_dump_while_other_threads_wait_for_the_gvl
    # Threads that never block: whichever runs the agent's job, the other waits for the GVL.
    target = threads_target(<<~RUBY)
      kept = Array.new(1000) { |i| "t\#{i % 2}" }
      2.times { Thread.new { n = 0; loop { n += 1 } } }
    RUBY
    attach!(target)
    dump = File.join(@tmpdir, "heap.json")
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump,
                               prefix: ["timeout", "-s", "INT", PATIENCE.to_s])
    assert status.success?, "memprof dump exited #{status.exitstatus}\n#{out}#{err}#{target.context}"
    assert_match(/wrote #{Regexp.escape(dump)} /, out)
    # Every String of `kept`, and no other, is "t0" or "t1".
    kept = File.foreach(dump).count { |record| record.match?(/"value":"t[01]"/) }
    assert_equal 1000, kept
    assert_alive(target)
    detach_and_finish!(target)
  end

  # The agent's jobs run on whichever Ruby thread checks its interrupts first, also one that is
  # starting or ending and has no Ruby frame, where rb_eval_string raises "Can't eval on top of
  # Fiber or Thread": the attach failed.
  def test_attach_while_threads_start_and_end
    target = threads_target("Thread.new { loop { Thread.new {}.join } }")
    20.times do
      attach!(target)
      detach!(target)
    end
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  # Ruby cannot fork while Ractors run (its own Process.fork hangs the child too): the dump is
  # refused with the reason, instead of waiting for a child that never answers.
  def test_dump_is_refused_while_ractors_run
    target = threads_target("2.times { Ractor.new { a = []; loop { a << 'r' * 10; a.shift if a.size > 100 } } }")
    # Said at attach, not only by each read-out later.
    out, err, status = memprof("attach", "-p", target.pid)
    assert status.success?, err
    assert_match(/^tracking process #{target.pid}: /, out)
    assert_equal "memprof: note: process #{target.pid} runs 3 Ractors: allocations are tracked, but " \
                 "stats, top, leaks, report and dump answer only once the main Ractor is left alone\n", err
    dump = File.join(@tmpdir, "heap.json")
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump,
                               prefix: ["timeout", "-s", "INT", PATIENCE.to_s])
    assert_equal [1, ""], [status.exitstatus, out], err
    assert_equal "memprof: process #{target.pid}: 3 Ractors are running, and Ruby cannot fork while " \
                 "Ractors run (the child would wait for them forever); this needs a fork: try again " \
                 "once only the main Ractor is left\n", err
    refute File.exist?(dump)
    assert_alive(target)
    detach!(target)
  end

  # A dump the target cannot write: the error says what and why in words, as the gem's errors
  # do. Before: "memprof's agent handler: #<Errno::ENOENT: No such file or directory - ...>".
  def test_a_dump_that_cannot_be_written_says_what_and_why
    target = threads_target("")
    attach!(target)
    dump = File.join(@tmpdir, "missing", "heap.json")
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump)
    assert_equal [1, ""], [status.exitstatus, out], err
    assert_equal "memprof: process #{target.pid}: Memprof.dump_all: cannot write #{dump} (No such file or directory)\n", err
    # "-" is no file the process can write (it wrote a file named "-").
    out, err, status = memprof("dump", "-p", target.pid, "-o", "-")
    assert_equal [1, ""], [status.exitstatus, out], err
    assert_equal "memprof: dump -o -: the process writes the dump itself, so it needs a file path (give one, " \
                 "then `memprof analyze FILE`)\n", err
    # Nor are /dev/stdout and its kind, which the process opened as its own: the dump went into
    # the target's standard output (a server's log), whatever memprof's was.
    File.symlink("/dev/stderr", link = File.join(@tmpdir, "err.json"))
    ["/dev/stdout", "/dev/fd/2", "/proc/self/fd/1", "/proc/thread-self/fd/1", "/dev//stderr", link].each do |own|
      out, err, status = memprof("dump", "-p", target.pid, "-o", own)
      assert_equal [1, ""], [status.exitstatus, out], err
      assert_equal "memprof: dump -o #{own}: the process opens the path itself, where it names the process's " \
                   "own descriptor, not memprof's (give a file path, then `memprof analyze FILE`)\n", err
    end
    assert_equal "", target.stderr_text
    assert_alive(target)
    detach!(target)
  end

  # A child that hangs for a reason memprof cannot foresee (a lock another thread held at the
  # fork, a C extension's fork handler; here the app's dump_all waits on a pipe) held the
  # agent's only thread forever: `dump` waited 30 minutes, and `detach` never answered. The
  # agent now kills a child asleep without CPU time or I/O for --stall-timeout seconds and
  # removes its scratch files.
  def test_a_hung_dump_child_is_killed_and_its_files_removed
    target = hung_dump_target
    dump = File.join(@tmpdir, "heap.json")
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump, "--stall-timeout", "1",
                               prefix: ["timeout", "-s", "INT", PATIENCE.to_s])
    assert_equal [1, ""], [status.exitstatus, out], err
    assert_match(/\Amemprof: process #{target.pid}: the forked child \(pid (\d+)\) made no progress for 1 s \(asleep in \w+, no CPU time and no I\/O\) and was killed\n\z/, err)
    child = Integer(err[/pid (\d+)/, 1])
    refute File.exist?("/proc/#{child}"), "the hung child #{child} is still there"
    assert_equal [], Dir.children(@tmpdir).grep(/heap\.json/), "the dump or its scratch files were left"
    assert_alive(target)
    detach_and_finish!(target)
  end

  # A child can hang at its very start on a lock that another thread held at the fork (on
  # Ruby 3.4, in rb_thread_atfork: a thread's interrupt_lock, ruby/ruby#12981; 1 dump in 20-60
  # of an app whose threads sleep often). Before: the dump failed after --stall-timeout (30 s
  # by default). The agent now forks again when a child has not started within a second.
  def test_a_dump_child_that_hangs_at_its_start_is_replaced_by_a_new_fork
    target = hang_at_fork_target(hangs: 2)
    dump = File.join(@tmpdir, "heap.json")
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump, "--stall-timeout", "10")
    assert status.success?, err
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 10
    assert_match(/\Awrote #{Regexp.escape(dump)} \([\d.]+ [kMG]?B\) from a child of process #{target.pid}, which paused [\d.]+ ms for 3 forks \(the child hung 2 times on a lock another thread held at the fork, and was killed\)\n/, out)
    assert_includes File.foreach(dump).first(50).join, '"type":"ROOT"'
    assert_no_hung_child_and_detach(target)
  end

  # Three hangs in a row: said at once, not after --stall-timeout, and the next dump works.
  def test_a_dump_whose_children_all_hang_at_their_start_says_why
    target = hang_at_fork_target(hangs: 3)
    dump = File.join(@tmpdir, "heap.json")
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump, "--stall-timeout", "600",
                               prefix: ["timeout", "-s", "INT", PATIENCE.to_s])
    assert_equal [1, ""], [status.exitstatus, out], err
    assert_match(/\Amemprof: process #{target.pid}: the forked child hung before it could start, 3 times in a row \(pid \d+ the last\): it waited on a lock that another thread of the process held at the fork \(on Ruby 3.4, a thread's interrupt_lock: ruby\/ruby#12981\); the process is unchanged, try again\n\z/, err)
    refute File.exist?(dump)
    out, err, status = memprof("dump", "-p", target.pid, "-o", dump)
    assert status.success?, err
    assert_match(/which paused [\d.]+ ms for the fork\n/, out)
    assert_no_hung_child_and_detach(target)
  end

  # Into a FIFO, the child writes the dump to a private file in the process's $TMPDIR, then
  # copies it into the FIFO. A reader that reads nothing stalls the copy: the child is killed
  # after --stall-timeout, and the private file went with it only once the agent's clean-up
  # knew it (before: a file as big as the dump stayed in $TMPDIR).
  def test_a_dump_child_killed_while_writing_into_a_fifo_leaves_nothing_in_tmpdir
    tmp = File.join(@tmpdir, "tmp")
    Dir.mkdir(tmp)
    target = threads_target(%(ENV["TMPDIR"] = #{tmp.inspect}\n$kept = Array.new(20_000) { |i| "kept \#{i}" }))
    attach!(target)
    fifo = File.join(@tmpdir, "heap.fifo")
    File.mkfifo(fifo)
    reader = Thread.new { File.open(fifo) { |pipe| sleep 0.05 until File.exist?("#{fifo}.done"); pipe.read } }
    out, err, status = memprof("dump", "-p", target.pid, "-o", fifo, "--stall-timeout", "1",
                               prefix: ["timeout", "-s", "INT", PATIENCE.to_s])
    assert_equal [1, ""], [status.exitstatus, out], err
    assert_match(/made no progress for 1 s \(asleep in \w+, no CPU time and no I\/O\) and was killed\n\z/, err)
    assert_equal [], Dir.children(tmp)
    File.write("#{fifo}.done", "")
    reader.join
    assert_alive(target)
    detach!(target)
  end

  # Ctrl-C on `memprof dump` stops the dump: the agent sees its requester go away, kills the
  # child and removes its files. Before: the child wrote on, for as long as it took (a hung one
  # until --stall-timeout, 30 s by default) and the agent's thread waited for it.
  def test_an_interrupted_dump_stops_its_child_and_removes_its_files
    target = hung_dump_target
    dump = File.join(@tmpdir, "heap.json")
    cli = spawn_target(command: [MEMPROF, "dump", "-p", target.pid.to_s, "-o", dump, "--stall-timeout", "600"])
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    children = []
    until !children.empty? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      children = Dir.glob("/proc/#{target.pid}/task/*/children").flat_map { |f| File.read(f).split.map(&:to_i) }
      sleep 0.02
    end
    refute_empty children, "no dump child was forked"
    Process.kill(:INT, cli.pid)
    assert_equal 130, cli.wait_exit.exitstatus
    # Said, not silent (before: exit 130 and nothing on stderr).
    assert_equal "\nmemprof: interrupted: dump cancelled (process #{target.pid} ends the child that was " \
                 "writing #{dump} and removes the file)\n", cli.stderr_text
    sleep 0.05 until children.none? { |pid| File.exist?("/proc/#{pid}") } ||
                     Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert children.none? { |pid| File.exist?("/proc/#{pid}") }, "the dump child #{children} is still there"
    sleep 0.05 until Dir.children(@tmpdir).grep(/heap\.json/).empty? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_equal [], Dir.children(@tmpdir).grep(/heap\.json/), "the dump or its scratch files were left"
    assert_alive(target)
    detach!(target)
  end

  # A compaction the agent's tracker could not follow empties its table: `stats -p` says how
  # many objects were lost, once, instead of showing a short table without a word.
  def test_stats_says_once_what_a_compaction_made_the_tracker_forget
    target = ruby_job_target(<<~'RUBY')
      while (line = $stdin.gets)
        if line.start_with?("compact")
          $kept = Array.new(1000) { Object.new }
          GC.method(:compact).super_method.call  # around memprof's wrapper of GC.compact
          puts "compacted #{Memprof.info[:lost_to_compaction]}"
        end
      end
    RUBY
    attach!(target)
    lost = Integer(run_job(target, "compact", /\Acompacted \d+\z/)[/\d+/])
    assert_operator lost, :>=, 1000
    _, err, status = memprof("stats", "-p", target.pid)
    assert status.success?, err
    assert_equal "memprof: process #{target.pid}: #{lost} tracked objects were forgotten at a GC compaction " \
                 "memprof could not follow (other Ractors running, or GC.compact called around memprof's " \
                 "wrapper); they are missing from this read-out and the later ones\n", err
    _, err, = memprof("stats", "-p", target.pid)
    assert_equal "", err
    # --json and --children say it as well, in "notes" and on stderr.
    said = "tracked objects were forgotten at a GC compaction memprof could not follow"
    total = Integer(run_job(target, "compact", /\Acompacted \d+\z/)[/\d+/])
    notes = JSON.parse(memprof!("stats", "-p", target.pid, "--json"))["notes"]
    assert_equal ["process #{target.pid}: #{total - lost} #{said}"], notes.map { |note| note[/\A.*follow/] }
    assert_equal [], JSON.parse(memprof!("stats", "-p", target.pid, "--json"))["notes"]
    lost = total
    total = Integer(run_job(target, "compact", /\Acompacted \d+\z/)[/\d+/])
    _, err, status = memprof("stats", "-p", target.pid, "--children")
    assert status.success?, err
    assert_match(/\Amemprof: process #{target.pid}: #{total - lost} #{said}/, err)
    detach!(target)
  end

  # `ps` names a process as ps(1) does, by the command line a server sets in $0 ("puma: cluster
  # worker 1"), not by the executable's name: every Ruby was "ruby". --json escapes it.
  def test_ps_names_a_process_by_its_command_line
    title = %q(memprof-test worker "1" \\ 2)
    target = ruby_job_target("$0 = #{title.inspect}\n$stdin.gets")
    attach!(target)
    row = memprof!("ps").lines.find { |line| line.split.first == target.pid.to_s }
    assert_equal format("%8d  %-8s  %-10s  %s\n", target.pid, RUBY_VERSION, "tracking", title), row
    entry = JSON.parse(memprof!("ps", "--json")).find { |process| process["pid"] == target.pid }
    assert_equal title, entry&.fetch("command")
    detach!(target)
  end

  # The process ends while a request waits for its answer (here a dump whose child hangs): the
  # error says so. Before: the hung child kept the CLI's connection open, and `dump` waited for
  # its 30-minute timeout; without a child, "process N: no reply from the agent: connection
  # closed". The dump's child is not ended with the process (it is the process's, not
  # memprof's): the error says it may still write the file.
  def test_a_process_that_ends_during_a_request_is_said_to_have_ended
    target = hung_dump_target
    request, dump, dump_children = dump_in_background(target)
    Process.kill(:KILL, target.pid)
    out, err, status = request.value
    assert_equal [1, "", "memprof: process #{target.pid} ended before its agent answered; the child it had " \
                         "forked to write #{dump} may still finish it\n"],
                 [status.exitstatus, out, err]
  ensure
    kill_children(dump_children)  # the hung dump child, our target's: it outlives its parent
  end

  private

  # `memprof dump` of `target` in a thread, returned once the target forked the dump's child:
  # [the thread (its value: memprof's out, err, status), the dump's path, the children's pids].
  def dump_in_background(target, *options)
    dump = File.join(@tmpdir, "heap.json")
    request = Thread.new do
      memprof("dump", "-p", target.pid, "-o", dump, *options, prefix: ["timeout", "-s", "INT", PATIENCE.to_s])
    end
    [request, dump, forked_children(target)]
  end

  # Children of a target (pids it forked, never found by name): they outlive a killed parent.
  def kill_children(pids)
    pids&.each do |child|
      Process.kill(:KILL, child)
    rescue Errno::ESRCH
      nil
    end
  end

  # The pids of the children `target` forked (a dump's), once there is one.
  def forked_children(target)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    sleep 0.02 while children_of(target).empty? && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    pids = children_of(target)
    refute_empty pids, "the dump never forked its child#{target.context}"
    pids
  end

  # An attached target whose dump_all never returns (it waits on a pipe nobody writes).
  def hung_dump_target
    target = threads_target(<<~RUBY)
      require "objspace"
      hang, $keep_open = IO.pipe
      ObjectSpace.singleton_class.prepend(Module.new { define_method(:dump_all) { |**| hang.read } })
    RUBY
    attach!(target)
    target
  end

  # An attached Ruby target whose next `hangs` forks have children that hang at their start
  # (fixtures/hang_at_fork.c).
  def hang_at_fork_target(hangs:)
    target = ruby_job_target(<<~'RUBY')
      require "fiddle"
      hang = Fiddle::Function.new(Fiddle.dlopen(ENV.fetch("HANG_AT_FORK_LIBRARY"))["hang_next_forks"],
                                  [Fiddle::TYPE_INT], Fiddle::TYPE_VOID)
      while (line = $stdin.gets)
        forks = Integer(line[/\Ahang (\d+)/, 1])
        hang.call(forks)
        puts "hanging #{forks}"
      end
    RUBY
    attach!(target)
    target.send_line("hang #{hangs}")
    target.wait_for(/\Ahanging #{hangs}\z/)
    target
  end

  def assert_no_hung_child_and_detach(target)
    assert_equal [], children_of(target), "a hung child was left"
    assert_alive(target)
    detach!(target)
  end

  def children_of(target)
    Dir["/proc/#{target.pid}/task/*/children"].flat_map { |f| File.read(f).split.map { Integer(_1) } }
  end

  # A Ruby target that runs `setup` (which starts threads), then waits for "finish" on stdin.
  # The target detached, then told to finish, and its exit checked: it ran on unharmed.
  def detach_and_finish!(target)
    detach!(target)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  def threads_target(setup)
    target = ruby_job_target("#{setup}\nputs \"threads running\"\n" \
                             "$stdin.each_line { |line| break if line.strip == \"finish\" }\n")
    target.wait_for(/\Athreads running\z/)
    target
  end
end
