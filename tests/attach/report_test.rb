# frozen_string_literal: true

# `memprof report -p PID`: what a running process allocated and retained during a window, with
# its GC running (issue 10, item 4). The target runs known workloads inside the window; objects
# made before it, and the window's garbage freed by the GC, must be told apart exactly.
require_relative "attach_helper"

class AttachReportTest < Minitest::Test
  include AttachTestHelper

  def test_window_counts_what_was_allocated_and_retained_in_it
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    # Made before the window: neither allocated nor retained in it (and freed inside it, when
    # the second "alloc" drops them).
    target.send_line("alloc")
    target.wait_for(/\Aallocated 10000\z/)

    report = window_report(target) do
      # Its own reply, not the one before the window: counted before the line is sent.
      run_job(target, "alloc", /\Aallocated 10000\z/)
      run_job(target, "churn", /\Achurned\z/)
    end
    kept = "#{target.script}:#{marked_line(target.script, 'kept')}"
    temporary = "#{target.script}:#{marked_line(target.script, 'temporary')}"
    allocated = rows(report, "allocated")
    retained = rows(report, "retained")
    assert_equal 10_000, allocated[[kept, "String"]], allocated.inspect
    assert_equal 10_000, retained[[kept, "String"]], retained.inspect
    # 5,000 Arrays, all garbage, freed by the GC during the window: allocated, not retained.
    assert_equal 5_000, allocated[[temporary, "Array"]], allocated.inspect
    assert_nil retained[[temporary, "Array"]]
    # Freed objects are counted with their size.
    temporaries = report.dig("report", "allocated", "by_location").find do |row|
      row["location"] == temporary && row["class"] == "Array"
    end
    assert_operator temporaries["bytes"], :>=, 5_000 * 40
    assert_match(/^Total allocated: \d+ bytes \(\d+ objects\)$/, report["text"])
    assert_match(/^allocated objects by location$/, report["text"])

    # A closed window costs nothing more, and the live view is untouched: the 10,000 kept
    # Strings are still the live ones of their line.
    assert_equal 10_000, live_stats(target.pid)["#{kept}:String"]
    # A second window sees only its own allocations.
    again = window_report(target) do
      run_job(target, "churn", /\Achurned\z/)
    end
    assert_nil rows(again, "allocated")[[kept, "String"]]
    assert_equal 5_000, rows(again, "allocated")[[temporary, "Array"]]

    detach!(target)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  # A second report ended the first one's window and took its results (the first then failed
  # with "no allocation window is open"): it is refused while the first memprof lives, and a
  # window whose memprof was killed goes to the next report.
  def test_a_second_report_waits_for_the_first_ones_window
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    report = window_report(target) do
      out, err, status = memprof("report", "-p", target.pid, "--duration", "1")
      assert_equal [1, ""], [status.exitstatus, out]
      assert_match(/\Amemprof: process #{target.pid}: a report window is already open in this process \(memprof report, pid \d+\): run this one when it has closed\n\z/, err)
      run_job(target, "churn", /\Achurned\z/)
    end
    temporary = "#{target.script}:#{marked_line(target.script, 'temporary')}"
    assert_equal 5_000, rows(report, "allocated")[[temporary, "Array"]]

    killed = open_window(target)
    killed.kill  # SIGKILL: its window stays open
    out, err, status = memprof("report", "-p", target.pid, "--duration", "0.2")
    assert status.success?, err
    assert_match(/^Total allocated: /, out)
    detach!(target)
  end

  # A `memprof report` of `target` whose window is open (until Ctrl-C or 600 s).
  def open_window(target)
    report = spawn_target(command: [MEMPROF, "report", "-p", target.pid.to_s, "--duration", "600s"])
    sleep 0.02 until report.stderr_text.include?("window open") || !report.alive?
    report
  end

  # An attached target, and a report whose window is open in it.
  def target_with_open_window
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    [target, open_window(target)]
  end

  # The process ends during the window: said so (it was "no such process: N").
  def test_a_process_that_ends_during_the_window_is_said_to
    target, report = target_with_open_window
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
    Process.kill(:INT, report.pid)  # closes the window now
    refute report.wait_exit.success?
    assert_includes report.stderr_text, "memprof: process #{target.pid} ended during the window: nothing to report\n"
  end

  # A detach during the window: said so (it was "no memprof agent in process N (run: memprof
  # attach -p N)", as if there had never been one).
  def test_a_detach_during_the_window_is_said_to
    target, report = target_with_open_window
    detach!(target)
    Process.kill(:INT, report.pid)  # closes the window now
    assert_equal 1, report.wait_exit.exitstatus
    assert_equal "memprof: the agent left process #{target.pid} during the window (memprof detach): nothing to " \
                 "report\n", report.stderr_text.lines.last
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  # {[class, location] => value} from `go tool pprof -traces` (each sample: its value, then its
  # frames leaf first), or nil without Debian's golang-go.
  def pprof_traces(path, sample_index)
    go = ENV.fetch("PATH", "").split(":").map { |dir| File.join(dir, "go") }.find { |f| File.executable?(f) }
    return nil unless go

    env = { "HOME" => @tmpdir, "GOCACHE" => File.join(@tmpdir, "gocache") }
    out, err, status = Open3.capture3(env, go, "tool", "pprof", "-traces", "-sample_index=#{sample_index}", path)
    assert status.success?, err
    out.split(/^-+\+-+$/).drop(1).filter_map do |block|
      lines = block.lines.map(&:strip).reject(&:empty?)
      next if lines.empty?

      value, leaf = lines.first.split(/\s+/, 2)
      [[leaf, lines[1]], Integer(value)]
    end.to_h
  end

  def test_window_as_pprof_and_a_saved_report_converted
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    path = File.join(@tmpdir, "window.pb.gz")
    report = window_report(target, "--pprof", path) do
      target.send_line("alloc")
      target.wait_for(/\Aallocated 10000\z/)
      target.send_line("churn")
      target.wait_for(/\Achurned\z/)
    end
    kept = "#{target.script}:#{marked_line(target.script, 'kept')}"
    temporary = "#{target.script}:#{marked_line(target.script, 'temporary')}"
    # The same report saved and converted gives the same file's numbers.
    saved = File.join(@tmpdir, "report.json")
    File.write(saved, JSON.generate(report["report"]))
    converted = File.join(@tmpdir, "converted.pb.gz")
    memprof!("report", "--input", saved, "--pprof", converted)
    [path, converted].each do |file|
      retained = pprof_traces(file, "inuse_objects")
      skip "go (Debian's golang-go) is not installed: pprof files not read back" unless retained
      assert_equal 10_000, retained[["String", kept]], retained.inspect
      assert_equal 0, retained.fetch(["Array", temporary], 0) # garbage: allocated, not retained
      assert_equal 5_000, pprof_traces(file, "alloc_objects")[["Array", temporary]]
    end
    _, err, status = memprof("report", "--input", File.join(@tmpdir, "missing.json"), "--pprof", converted)
    assert_equal [1, "memprof: #{File.join(@tmpdir, 'missing.json')}: No such file or directory\n"],
                 [status.exitstatus, err]
    detach!(target)
  end

  def test_needs_an_attached_process
    target = spawn_target("target.rb", "sleep")
    target.wait_for(/\Aready #{target.pid}\z/)
    out, err, status = memprof("report", "-p", target.pid, "--duration", "1s")
    refute status.success?
    assert_empty out
    assert_match(/\Amemprof: no memprof agent in process #{target.pid} \(run: memprof attach -p #{target.pid}\)$/, err)
    assert_alive target
  end

  private

  # Runs `memprof report -p PID --json` with a long window, runs the block while it is open,
  # then ends it early with Ctrl-C (SIGINT to the pid we spawned) and returns its JSON.
  def window_report(target, *options)
    stdin, stdout, stderr, waiter = Open3.popen3(MEMPROF, "report", "-p", target.pid.to_s,
                                                 "--duration", "600s", "--json", *options)
    stdin.close
    opened = Timeout.timeout(PATIENCE) { stderr.gets }
    assert_match(/\Awindow open for 600 s in process #{target.pid}/, opened.to_s)
    yield
    Process.kill(:INT, waiter.pid)
    out = Timeout.timeout(PATIENCE) { stdout.read }
    status = waiter.value
    assert status.success?, "memprof report exited #{status.exitstatus}: #{stderr.read}#{target.context}"
    JSON.parse(out)
  ensure
    [stdout, stderr].each { |io| io&.close unless io&.closed? }
    if waiter&.alive?
      Process.kill(:KILL, waiter.pid)
      waiter.join
    end
  end

  # {[location, class] => count} of one section.
  def rows(report, section)
    report.dig("report", section, "by_location").to_h { |row| [[row["location"], row["class"]], row["count"]] }
  end
end
