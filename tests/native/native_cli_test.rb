# frozen_string_literal: true

# `memprof native` as a user runs it (issue 12), on a real process: the fixture program
# (fixtures/native_target.c) leaks and frees from known functions of libnative_allocating.so,
# and from libnative_late.so once it dlopen'ed it; the tests attach to it by the pid they spawned
# it with, or launch it, and check the report's exact bytes and blocks per call site and library.
require_relative "../attach/attach_helper"

class NativeCliTest < Minitest::Test
  include AttachTestHelper

  BUILD = ENV.fetch("NATIVE_FIXTURE_DIR") { raise "NATIVE_FIXTURE_DIR is not set (run the test through ctest)" }
  TARGET = File.join(BUILD, "native_target")
  LATE = File.join(BUILD, "libnative_late.so")

  def native_target
    target = spawn_target(command: [TARGET, LATE])
    target.wait_for(/\Aready \d+/)
    target
  end

  def start_native(pid, *options) = start_recording("native", "-p", pid, *options, ready: "memprof: tracking the malloc family")

  def stop_native(native) = stop_recording(native)

  NOTHING_LIVE = "Nothing allocated during the session was live at its end."

  # The rows of "Live at the end (leaked), by call site"; none when the report says nothing was
  # (or that nothing was allocated: then it has only its totals).
  def leaked_sites(lines)
    return [] if lines.include?(NOTHING_LIVE) || lines.first&.match?(/\AIn [\d.]+ s: 0 allocations /)

    section(lines, "Live at the end (leaked), by call site")
  end

  # The rows of one section of the report: [[numbers...], name].
  def section(lines, title)
    start = lines.index(title) or flunk("no section '#{title}' in:\n#{lines.join("\n")}")
    lines[(start + 2)..].take_while { |line| !line.empty? }.map do |line|
      fields = line.split
      numbers = fields.take_while { |f| f.match?(/\A\d+\z/) }.map { |f| Integer(f) }
      [numbers, fields.drop(numbers.size).join(" ")]
    end
  end

  def row(rows, name_pattern)
    rows.find { |_, name| name.match?(name_pattern) } or flunk("no row #{name_pattern.inspect} in #{rows.inspect}")
  end

  def test_names_the_library_and_call_site_of_every_leaked_byte
    target = native_target
    native = start_native(target.pid)
    run_job(target, "leak 100 4096", /\Adone leak/)
    run_job(target, "temp 1000 64", /\Adone temp/)
    run_job(target, "late 7 1000", /\Adone late 1/)
    lines = stop_native(native)
    leaked = section(lines, "Live at the end (leaked), by call site")
    assert_equal [409_600, 100], row(leaked, /\Anative_leak\+0x\h+ \(libnative_allocating\.so\)\z/)[0]
    assert_equal [7000, 7], row(leaked, /\Anative_late_malloc\+0x\h+ \(libnative_late\.so\)\z/)[0]
    refute leaked.any? { |_, name| name.include?("native_temporaries") }, leaked.inspect
    libraries = section(lines, "Live at the end (leaked), by library")
    assert_equal [409_600, 100], row(libraries, /\Alibnative_allocating\.so\z/)[0]
    assert_equal [7000, 7], row(libraries, /\Alibnative_late\.so\z/)[0]
    allocated = section(lines, "Allocated, by call site")
    assert_equal [64_000, 1000, 1000], row(allocated, /\Anative_temporaries\+0x\h+ /)[0]
    assert_equal [409_600, 100, 0], row(allocated, /\Anative_leak\+0x\h+ /)[0]
    run_job(target, "free", /\Adone free/) # blocks tracked then untracked are freed as usual
    run_job(target, "leak 1 10", /\Adone leak/)
    assert_alive target
  end

  # A C++ program's blocks come from operator new, whose malloc call is inside libstdc++: each
  # is charged to the function that said `new`, by its C++ name, and to the program.
  def test_blocks_from_operator_new_are_charged_to_the_line_that_said_new
    program = File.join(BUILD, "native_new_leaks")
    out, err, status = memprof("native", "--", program)
    assert status.success?, err
    assert_equal "leaked\n", out  # the program's output alone: the report is on stderr
    leaked = section(err.lines.map(&:chomp), "Live at the end (leaked), by call site")
    assert_equal [30_000, 300], row(leaked, /\Aleak_nodes\+0x\h+ \(native_new_leaks\)\z/)[0]
    assert_equal [3200, 50], row(leaked, /\Aleak_arrays\+0x\h+ \(native_new_leaks\)\z/)[0]
    assert_equal [640, 40], row(leaked, /\Aleak_pairs<\.\.\.>\+0x\h+ \(native_new_leaks\)\z/)[0]
    # The 32-byte string objects at their `new`, and their 201-byte buffers where std::string's
    # constructor runs: inlined into leak_strings by GCC 12 at -O1 (another call site of it), or
    # libstdc++'s own code, which gives way to its caller, leak_strings.
    strings = leaked.select { |_, name| name.start_with?("leak_strings+0x") }
    assert_includes strings.map(&:first), [6400, 200]
    assert_equal [46_600, 400], strings.map(&:first).transpose.map(&:sum), leaked.inspect
    refute leaked.any? { |_, name| name.start_with?("operator new", "_Znwm", "_Znam") }, leaked.inspect
    # Everything is the program's, stdout's buffer (libc's, made at its first printf) included.
    libraries = section(err.lines.map(&:chomp), "Live at the end (leaked), by library")
    assert_equal [[[30_000 + 3200 + 46_600 + 640 + 4096, 300 + 50 + 400 + 40 + 1], "native_new_leaks"]], libraries
  end

  # C++ names are short in the tables and the stacks (a libstdc++ template's name alone is
  # hundreds of characters); --full-names and --json have them whole, parameters and template
  # arguments. Before: mangled in --collapsed and --flame-graph (_Z10leak_nodesi).
  def test_cxx_names_are_short_in_tables_and_whole_with_full_names_and_in_json
    program = File.join(BUILD, "native_new_leaks")
    collapsed = File.join(@tmpdir, "leaks.collapsed")
    _, err, status = memprof("native", "--collapsed", collapsed, "--", program)
    assert status.success?, err
    leaves = File.readlines(collapsed, chomp: true).to_h { |line| line.split(";").last.split(" ") }
    assert_equal({ "leak_nodes" => "30000", "leak_pairs<...>" => "640" }, leaves.slice("leak_nodes", "leak_pairs<...>"))

    _, err, status = memprof("native", "--full-names", "--", program)
    assert status.success?, err
    leaked = section(err.lines.map(&:chomp), "Live at the end (leaked), by call site")
    assert_equal [30_000, 300], row(leaked, /\Aleak_nodes\(int\)\+0x\h+ \(native_new_leaks\)\z/)[0]
    assert_equal [640, 40], row(leaked, /\Avoid leak_pairs<long>\(int\)\+0x\h+ \(native_new_leaks\)\z/)[0]

    _, err, status = memprof("native", "--json", "--", program)
    assert status.success?, err
    sites = JSON.parse(err.lines.grep_v(/\Amemprof: /).join)["sites"].select { |site| site["live_blocks"].positive? }
    pairs = sites.select { |site| site["site"].start_with?("void leak_pairs<long>(int)+0x") }
    assert_equal [640, 40], pairs.map { |site| [site["live_bytes"], site["live_blocks"]] }.transpose.map(&:sum)
  end

  # A C program whose every leak is made inside libc (strdup, asprintf, fopen): each block is
  # charged to the function that called libc, and "by library" names the program, not libc.
  # Before: strdup+0x1a, __vasprintf_internal+0x..., __fopen_internal+0x... (libc.so.6).
  def test_blocks_libc_makes_are_charged_to_the_function_that_called_libc
    out, err, status = memprof("native", "--", File.join(BUILD, "native_libc_leaks"))
    assert status.success?, err
    assert_equal "leaked\n", out
    lines = err.lines.map(&:chomp)
    leaked = section(lines, "Live at the end (leaked), by call site")
    assert_equal [1100, 100], row(leaked, /\Aleak_copies\+0x\h+ \(native_libc_leaks\)\z/)[0]
    assert_equal [500, 50], row(leaked, /\Aleak_formatted\+0x\h+ \(native_libc_leaks\)\z/)[0]
    files = row(leaked, /\Aleak_files\+0x\h+ \(native_libc_leaks\)\z/)[0]
    assert_equal 10, files[1]
    assert_equal 0, files[0] % 10, files.inspect  # ten FILEs of one size
    libraries = section(lines, "Live at the end (leaked), by library")
    assert_equal ["native_libc_leaks"], libraries.map(&:last), libraries.inspect
    # asprintf's steps inside libc (glibc 2.36: a first buffer, then a realloc to the string's
    # length) are its caller's too.
    allocated = section(lines, "Allocated, by call site")
    assert_operator row(allocated, /\Aleak_formatted\+0x\h+ /)[0][1], :>=, 50
    assert_empty allocated.select { |_, name| name.include?("libc.so") }, allocated.inspect
  end

  # --top N is N rows in every section, "by library" included (it listed every library).
  def test_top_limits_the_library_section_too
    target = native_target
    native = start_native(target.pid, "--top", "1")
    run_job(target, "leak 100 4096", /\Adone leak/)
    run_job(target, "late 7 1000", /\Adone late 1/)
    lines = stop_native(native)
    assert_equal [[[409_600, 100], "libnative_allocating.so"]], section(lines, "Live at the end (leaked), by library")
    assert_equal 1, section(lines, "Live at the end (leaked), by call site").size
    assert_alive target
  end

  def test_frees_of_blocks_from_before_the_start_are_counted_apart
    target = native_target
    run_job(target, "leak 10 100", /\Adone leak/)
    native = start_native(target.pid)
    run_job(target, "free", /\Adone free/)
    lines = stop_native(native)
    assert_includes lines, "10 frees of blocks allocated before the start (not counted above)"
    assert_empty leaked_sites(lines).select { |_, name| name.include?("native_") }
  end

  # Nothing left live: one line says so, not three tables of headers without rows.
  def test_a_session_where_every_block_was_freed_says_nothing_leaked
    target = native_target
    native = start_native(target.pid)
    run_job(target, "temp 20 64", /\Adone temp/)
    lines = stop_native(native)
    assert_match(/\AIn [\d.]+ s: 20 allocations \(1.3 kB\), 20 frees/, lines.first)
    assert_includes lines, NOTHING_LIVE
    refute lines.any? { |line| line.start_with?("Live at the end (leaked), by") }, lines.join("\n")
    assert_equal 20, section(lines, "Allocated, by call site").sum { |numbers, _| numbers[1] }
  end

  # A child forked while its parent is tracked (a preforking server's worker) ends its copy of
  # the session, and `native -p CHILD` counts its own blocks exactly. Before: "process CHILD is
  # already tracked by memprof native", from the copy nobody read.
  def test_a_child_forked_during_a_session_is_tracked_on_its_own
    target = native_target
    parent = start_native(target.pid)
    child = Integer(run_job(target, "fork", /\Aforked \d+\z/)[/\d+/])
    native = start_native(child)
    run_job(target, "leak 30 512", /\Adone leak/)
    leaked = section(stop_native(native), "Live at the end (leaked), by call site")
    assert_equal [15_360, 30], row(leaked, /\Anative_leak\+0x\h+ \(libnative_allocating\.so\)\z/)[0]
    refute leaked_sites(stop_native(parent)).any? { |_, name| name.include?("native_leak") }
    assert_includes parent.stderr_text, "memprof: process #{target.pid} started a child process (running now: " \
                                        "#{child}); their blocks are not in this report: memprof records one " \
                                        "process, -p CHILD records a child\n"
  ensure
    Process.kill(:KILL, child) if child
  end

  # The report goes to stderr: the command's stdout is its own, byte for byte (before: `native --
  # gzip -c f > f.gz` appended the report to the gzip file). -o - asks for stdout.
  def test_launch_mode_and_json
    out, err, status = memprof("native", "--json", "--", TARGET, "once", 50, 1000)
    assert status.success?, err
    assert_equal "leaked 50\n", out
    report = JSON.parse(err.lines.grep_v(/\Amemprof: /).join)
    site = report["sites"].find { |s| s["site"].start_with?("native_leak+") }
    assert site, err
    assert_equal "libnative_allocating.so", site["library"]
    # The fixtures are built with debug information: the call's source line, from DWARF.
    source = File.expand_path("fixtures/allocating.c", __dir__)
    line = File.readlines(source).index { |l| l.include?("out[i] = malloc(size);") } + 1
    assert_equal "#{source}:#{line}", site["source"]
    assert_equal [50, 50_000, 50, 50_000], site.values_at("allocations", "allocated_bytes", "live_blocks", "live_bytes")
    assert_match(/memprof: process \d+ exited with status 0/, err)
    out, err, status = memprof("native", "--json", "-o", "-", "--", TARGET, "once", 50, 1000)
    assert status.success?, err
    assert_equal [50, 50_000], JSON.parse(out.lines.grep_v(/\Aleaked /).join)["sites"]
      .find { |s| s["site"].start_with?("native_leak+") }.values_at("live_blocks", "live_bytes")
    assert_empty err.lines.grep_v(/\Amemprof: /), err
    refute_match(/waiting for process/, err)  # it ended by itself: nothing to wait for
    # A session that stops before its command ends says why memprof goes on waiting.
    _, err, status = memprof("native", "--duration", "0.2s", "-o", "/dev/null", "--", "/bin/sh", "-c", "sleep 1")
    assert status.success?, err
    assert_match(/^memprof: tracking has stopped; waiting for process \d+ to end, whose exit status is memprof's$/,
                 err)
  end

  # -o keeps the report apart from the command's own output (--json mixed them, and there was
  # no -o); a path that cannot be written is said before the command runs, not after it.
  def test_the_report_goes_to_the_output_file
    report_file = File.join(@tmpdir, "native.json")
    out, err, status = memprof("native", "--json", "-o", report_file, "--", TARGET, "once", 50, 1000)
    assert status.success?, err
    assert out.lines.all? { |line| line.start_with?("leaked") }, out
    site = JSON.parse(File.read(report_file))["sites"].find { |s| s["site"].start_with?("native_leak+") }
    assert_equal [50, 50_000], site.values_at("live_blocks", "live_bytes")
    missing = File.join(@tmpdir, "no-such-dir", "r.txt")
    %w[-o --pprof --collapsed --flame-graph].each do |option|
      out, err, status = memprof("native", option, missing, "--", TARGET, "once", 50, 1000)
      assert_equal [1, "", "memprof: cannot write #{missing}: No such file or directory\n"], [status.exitstatus, out, err]
    end
  end

  # Before: the report of a command that ended by abort() between two reads was an earlier
  # snapshot (0 allocations for a short run), with no word that it was.
  def test_a_command_that_ends_without_exit_is_reported_with_a_warning
    _, err, status = memprof("native", "--", TARGET, "abort", 50, 1000)
    assert_equal 134, status.exitstatus, err
    assert_match(/memprof: warning: process \d+ ended without exit\(\) or _exit \(a signal, or an exit system call of its own\): the report is its last snapshot/, err)
  end

  # _exit runs no atexit handler: the agent's exit watch waits for the last readout instead.
  # Before, the report was the snapshot of an earlier read (0 allocations), with a warning.
  def test_a_command_that_ends_by_exit_without_handlers_is_reported_whole
    _, err, status = memprof("native", "--", TARGET, "once_exit", 50, 1000)
    assert status.success?, err
    refute_match(/ended without exit\(\)/, err)
    leaked = section(err.lines.map(&:chomp), "Live at the end (leaked), by call site")
    assert_equal [50_000, 50], row(leaked, /\Anative_leak\+0x\h+ \(libnative_allocating\.so\)\z/)[0]
  end

  # A wrapper (an rbenv shim, sh -c, bundle exec) execs the program the user meant: the report
  # is that program's. Before: the wrapper's last snapshot (its 50 blocks of 1,000 bytes).
  def test_a_command_that_replaces_its_program_is_reported_for_the_new_one
    out, err, status = memprof("native", "--", TARGET, "exec", 50, 1000, "self", "once", 30, 2000)
    assert status.success?, err
    assert_match(/^memprof: process \d+ replaced its program \(exec\): tracking the malloc family in the new one$/, err)
    assert_match(/memprof: process \d+ exited with status 0/, err)
    refute_match(/warning/, err)
    leaked = section(err.lines.map(&:chomp), "Live at the end (leaked), by call site")
    assert_equal [60_000, 30], row(leaked, /\Anative_leak\+0x\h+ \(libnative_allocating\.so\)\z/)[0], err
  end

  # A program the agent cannot be preloaded into: the report is the old program's, and says so.
  # Before: the request in flight failed with "no reply from the agent: read: Connection reset
  # by peer", exit 1, and no report at all.
  def test_a_command_that_execs_a_static_program_is_reported_up_to_the_exec
    out, err, status = memprof("native", "--", TARGET, "exec", 50, 1000, ENV.fetch("STATIC_PROGRAM"))
    assert status.success?, err
    assert_match(/memprof: warning: process \d+ replaced its program \(exec\): the program is statically linked: memprof's agent cannot be preloaded into it; the report is the old program's last snapshot/, err)
    assert_match(/memprof: process \d+ exited with status 0/, err)  # the new program, waited for
    leaked = section(err.lines.map(&:chomp), "Live at the end (leaked), by call site")
    assert_equal [50_000, 50], row(leaked, /\Anative_leak\+0x\h+ \(libnative_allocating\.so\)\z/)[0], err
  end

  def test_errors_are_one_line_and_exit_non_zero
    dead = Process.spawn("true")
    Process.wait(dead)
    _, err, status = memprof("native", "-p", dead)
    assert_equal [1, "memprof: no such process: #{dead}\n"], [status.exitstatus, err]
    _, err, status = memprof("native")
    assert_equal [1, "memprof: record a running process (-p PID) or a command (-- CMD ARGS), one of the two\n"],
                 [status.exitstatus, err]
  end
end
