# frozen_string_literal: true

# `memprof native` on a Ruby process whose C extension leaks (issue 12's accuracy test): the test
# builds fixtures/leaky_ext with mkmf for the Ruby that runs it, runs fixtures/leaky_app.rb, and
# checks that every leaked block is charged to leaky.so, to leaky_leak, and to the Ruby line
# that called it, with exact counts and bytes -- attached to a running process and launched.
require "json"
require "rbconfig"
require "tmpdir"
require_relative "../attach/attach_helper"

class NativeRubyTest < Minitest::Test
  include AttachTestHelper

  APP = File.expand_path("fixtures/leaky_app.rb", __dir__)
  EXTENSION_SOURCE = File.expand_path("fixtures/leaky_ext", __dir__)

  # leaky.so built once per run, for this Ruby.
  def self.extension_dir
    @extension_dir ||= begin
      dir = Dir.mktmpdir("memprof-leaky-ext")
      Minitest.after_run { FileUtils.rm_rf(dir) }
      log = File.join(dir, "build.log")
      built = system(RbConfig.ruby, File.join(EXTENSION_SOURCE, "extconf.rb"), chdir: dir, out: log, err: log) &&
              system("make", chdir: dir, out: log, err: log)
      raise "building leaky.so failed:\n#{File.read(log)}" unless built

      dir
    end
  end

  def leaky_app
    target = spawn_target(command: [RbConfig.ruby, APP, self.class.extension_dir])
    target.wait_for(/\Aready \d+/)
    target
  end

  def line_of(mark) = "#{File.basename(APP)}:#{marked_line(APP, mark)}"

  # {"leaky_app.rb:10 leaky_leak" => [bytes, blocks]} from the JSON report: leaky.so's sites
  # by the Ruby line (file's base name) and function that made them, where a value is not 0.
  def leaky_rows(report, value = %w[live_bytes live_blocks])
    sites = report["sites"].select { |site| site["library"] == "leaky.so" && site.values_at(*value).any?(&:positive?) }
    sites.each_with_object({}) do |site, rows|
      key = "#{site['ruby'] && File.basename(site['ruby'])} #{site['site'][/\A\w+/]}"
      rows[key] = (rows[key] || Array.new(value.size, 0)).zip(site.values_at(*value)).map(&:sum)
    end
  end

  def json_report(lines)
    JSON.parse(lines.reject { |line| line.start_with?("done ") }.join("\n"))
  end

  def test_attached_a_leak_is_charged_to_the_extension_function_and_the_ruby_line
    target = leaky_app
    native = start_recording("native", "-p", target.pid, "--json", ready: "memprof: tracking the malloc family")
    run_job(target, "leak 100 4096", /\Adone leak\z/)
    run_job(target, "leak2 30 1000", /\Adone leak2/)
    run_job(target, "temp 1000 64", /\Adone temp/)
    report = json_report(stop_recording(native))
    assert_equal({ "#{line_of('first')} leaky_leak" => [409_600, 100],
                   "#{line_of('second')} leaky_leak" => [30_000, 30] },
                 leaky_rows(report))
    assert_equal({ "#{line_of('temporaries')} leaky_temporaries" => [1000, 64_000, 1000, 0] },
                 leaky_rows(report, %w[allocations allocated_bytes temporaries live_blocks])
                   .select { |key, _| key.end_with?("leaky_temporaries") })
    assert_alive target
    run_job(target, "release", /\Adone release/) # blocks tracked then released are freed as usual
  end

  # A C extension's blocks from Ruby's allocator (ALLOC_N, ZALLOC_N, xmalloc and REALLOC_N) are
  # charged to the extension's function, as its mallocs are. Before: to Ruby's allocator inside
  # libruby (rb_gc_impl_malloc, objspace_xmalloc0), and "by library" said libruby.
  def test_blocks_from_rubys_allocator_are_charged_to_the_extension_that_asked
    target = leaky_app
    native = start_recording("native", "-p", target.pid, "--json", ready: "memprof: tracking the malloc family")
    run_job(target, "xleak 40 300", /\Adone xleak\z/)
    report = json_report(stop_recording(native))
    assert_equal({ "#{line_of('xleak')} leaky_xleak" => [(40 * 300) + (3 * 300), 42] }, leaky_rows(report))
    run_job(target, "xrelease", /\Adone xrelease\z/)
    assert_alive target
  end

  # --no-ruby-lines: the two lines' leaks are one site, with no Ruby line (the flag had no test).
  def test_no_ruby_lines_merges_the_lines_of_one_call_site
    target = leaky_app
    native = start_recording("native", "-p", target.pid, "--json", "--no-ruby-lines",
                             ready: "memprof: tracking the malloc family")
    run_job(target, "leak 100 4096", /\Adone leak\z/)
    run_job(target, "leak2 30 1000", /\Adone leak2/)
    report = json_report(stop_recording(native))
    assert_equal({ " leaky_leak" => [439_600, 130] }, leaky_rows(report))
    assert_alive target
  end

  # Blocks a C extension allocates without the GVL (Ruby's frames are not read there) are
  # charged to the Ruby line that called into the region (recorded when the extension let go of
  # the GVL through rb_thread_call_without_gvl: agent/blocking_region_lines.h). Before: no Ruby
  # line at all, then "(without the GVL)".
  def test_blocks_allocated_without_the_gvl_have_the_line_that_released_it
    target = leaky_app
    native = start_recording("native", "-p", target.pid, "--json", ready: "memprof: tracking the malloc family")
    run_job(target, "nogvl 20 2000", /\Adone nogvl\z/)
    report = json_report(stop_recording(native))
    assert_equal({ "leaky_app.rb:42 malloc_blocks" => [40_000, 20] }, leaky_rows(report))
  end

  # A launched Ruby that ends by itself is collected at its end (an end proc after its at_exit
  # blocks; its exit() comes after the VM is gone): the garbage Strings' buffers are not live at
  # the end, the kept ones' are. Before: every String's buffer was live at the end.
  def test_a_launched_ruby_is_collected_at_its_end
    buffers = 50 * 4096
    { [] => 0...4096, ["--no-gc"] => buffers...(buffers + 4096) }.each do |flags, garbage_bytes|
      _, err, status = memprof("native", "--json", *flags, "--", RbConfig.ruby, APP, self.class.extension_dir,
                               "strings 50 4096")
      assert status.success?, err
      report = json_report(err.lines.map(&:chomp).grep_v(/\Amemprof: /))
      live = report["sites"].select { |site| site["ruby"] }
                            .group_by { |site| File.basename(site["ruby"]) }
                            .transform_values { |sites| sites.sum { |site| site["live_bytes"] } }
      assert_includes buffers...(buffers + 4096), live[line_of("kept")], "#{flags}: #{live}"
      assert_includes garbage_bytes, live.fetch(line_of("garbage"), 0), "#{flags}: #{live}"
      collected = /^memprof: a full garbage collection in process \d+ took [\d.]+ ms at its end/
      flags.empty? ? assert_match(collected, err) : refute_match(collected, err)
    end
  end

  # In a Ruby process, the blocks of objects that are garbage at the stop are freed by the full
  # collection memprof runs before its last readout: only the kept Strings' buffers are live at
  # the end, where before every String's was (--no-gc still shows them so). Bytes, not blocks:
  # a line's first run also makes a few small blocks (caches), and the Array of kept ones grows.
  def test_a_collection_before_the_readout_frees_the_blocks_of_garbage
    target = leaky_app
    buffers = 50 * 4096
    { [] => 0...4096, ["--no-gc"] => buffers...(buffers + 4096) }.each do |flags, garbage_bytes|
      native = start_recording("native", "-p", target.pid, "--json", *flags, ready: "memprof: tracking the malloc family")
      run_job(target, "strings 50 4096", /\Adone strings\z/)
      report = json_report(stop_recording(native))
      live = report["sites"].select { |site| site["ruby"] }
                            .group_by { |site| File.basename(site["ruby"]) }
                            .transform_values { |sites| sites.sum { |site| site["live_bytes"] } }
      assert_includes buffers...(buffers + 4096), live[line_of("kept")], "#{flags}: #{live}"
      assert_includes garbage_bytes, live.fetch(line_of("garbage"), 0), "#{flags}: #{live}"
      # The collection's job leaves nothing of memprof's behind on the app's thread (a failed
      # dlsym there left its error message, 105 bytes in ld.so and libc, live at the end; such a
      # block is now charged to the caller of the C runtime, memprof's agent).
      loader = report["sites"].select do |site|
        site["library"] =~ /\A(ld-linux|libc\.so|libmemprof_agent)/ && site["live_blocks"].positive?
      end
      assert_empty loader, flags.inspect
      said = native.stderr_text
      if flags.empty?
        assert_match(/^memprof: a full garbage collection in process #{target.pid} took [\d.]+ ms before the readout/, said)
      else
        refute_match(/garbage collection/, said)
      end
    end
    assert_alive target
  end

  def test_the_text_report_names_the_ruby_line_and_call_site_together
    target = leaky_app
    native = start_recording("native", "-p", target.pid, ready: "memprof: tracking the malloc family")
    run_job(target, "leak 20 512", /\Adone leak\z/)
    lines = stop_recording(native)
    start = lines.index("Live at the end (leaked), by Ruby line") or flunk(lines.join("\n"))
    row = lines[(start + 2)..].take_while { |line| !line.empty? }.find { |line| line.include?("leaky_leak") }
    assert_match(/\A\s+10240\s+20\s+\S*#{Regexp.escape(line_of('first'))}\s+leaky_leak\+0x\h+ \(leaky\.so\)\z/, row)
  end

  def test_launched_with_stacks_from_eight_threads
    out, err, status = memprof("native", "--json", "--stack", 12, "--", RbConfig.ruby, APP,
                               self.class.extension_dir, "threads 8 50 100", "leak2 3 10")
    assert status.success?, err
    assert_equal "done threads\ndone leak2\n", out  # the program's own output: the report is on stderr
    # It ended by itself: collected at its end, which a line says.
    assert_match(/^memprof: a full garbage collection in process \d+ took [\d.]+ ms at its end/, err)
    report = json_report(err.lines.map(&:chomp).grep_v(/\Amemprof: /))
    assert_equal({ "#{line_of('first')} leaky_leak" => [40_000, 400],
                   "#{line_of('second')} leaky_leak" => [30, 3] },
                 leaky_rows(report))
    leaky = report["sites"].select { |site| site["library"] == "leaky.so" && site["site"].start_with?("leaky_leak") }
    leaky.each do |site|
      assert_operator site["stack"].size, :>=, 3, site.inspect
      assert_operator site["stack"].size, :<=, 12, site.inspect
      assert_equal site["site"], site["stack"].first
      assert site["stack"].drop(1).any? { |frame| frame.include?("libruby") || frame.include?("ruby") }, site.inspect
    end
  end

  def test_pprof_collapsed_stacks_and_flame_graph_say_the_same
    files = %w[leak.pb.gz leak.collapsed leak.html].map { |name| File.join(@tmpdir, name) }
    _, err, status = memprof("native", "--stack", 12, "--pprof", files[0], "--collapsed", files[1],
                             "--flame-graph", files[2], "--", RbConfig.ruby, APP, self.class.extension_dir,
                             "leak 100 4096", "leak2 30 1000")
    assert status.success?, err
    # Collapsed stacks, root first: the Ruby line, the interpreter's frames, leaky_leak last.
    leaked = Hash.new(0)
    File.foreach(files[1]) do |line|
      stack, value = line.split(/ (?=\d+$)/)
      frames = stack.split(";")
      leaked[File.basename(frames.first)] += Integer(value) if frames.last == "leaky_leak"
    end
    assert_equal({ line_of("first") => 409_600, line_of("second") => 30_000 }, leaked)
    html = File.read(files[2])
    assert_includes html, "leaky_leak"
    refute_match(%r{<script[^>]+src=|https?://}, html)
    go = ENV.fetch("PATH", "").split(":").map { |dir| File.join(dir, "go") }.find { |path| File.executable?(path) }
    skip "go (Debian's golang-go) is not installed: pprof file not read back" unless go
    env = { "HOME" => @tmpdir, "GOCACHE" => File.join(@tmpdir, "gocache") }
    top, pprof_err, pprof_status = Open3.capture3(env, go, "tool", "pprof", "-top", "-unit=B", "-sample_index=inuse_space",
                                                  files[0])
    assert pprof_status.success?, pprof_err
    assert_match(/^Type: inuse_space$/, top)
    # 409,600 + 30,000 bytes made by leaky_leak itself (flat; its cum adds REALLOC_N's array).
    assert_match(/^\s+439600B\s.*\sleaky_leak$/, top)
  end

  def test_top_native_shows_the_blocks_leaked_since_it_started
    target = leaky_app
    run_job(target, "leak 10 100", /\Adone leak\z/) # before top: not its business
    top = start_recording("top", "-p", target.pid, "--native", "--json", "--interval", "3s", "--sort", "bytes",
                          ready: "memprof: tracking the malloc family")
    run_job(target, "leak 50 2048", /\Adone leak\z/)
    status = top.wait_exit
    assert status.success?, top.context
    rows = JSON.parse(top.lines.join)["rows"]
    leak = rows.find { |row| row["key"].include?("leaky_leak") } or flunk(rows.inspect)
    assert_match(/#{Regexp.escape(line_of('first'))} leaky_leak\+0x\h+ \(leaky\.so\)\z/, leak["key"])
    assert_equal [50, 102_400, 50], leak.values_at("live", "bytes", "growth")
    # top's session ended with it: a new one starts (one at a time per process).
    native = start_recording("native", "-p", target.pid, ready: "memprof: tracking the malloc family")
    stop_recording(native)
    assert_alive target
  end
end
