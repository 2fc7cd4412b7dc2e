# frozen_string_literal: true

require_relative "test_helper"

# Ractors allocate in parallel (each under its own lock, not one GVL): recording must stay
# exact and must not crash, and what cannot be exact must be refused with a clear message.
class RactorTest < Minitest::Test
  include MemprofTestHelper

  # Four Ractors each keep 50,000 Strings and one Array (shared with the main Ractor by
  # make_shareable, which freezes in place and copies nothing) while the main Ractor allocates
  # 200,000 Arrays at the same time.
  PARALLEL = <<~'RUBY'
    Warning[:experimental] = false
    Memprof.start
    ractors = 4.times.map do
      Ractor.new do
        strings = Array.new(50_000) { |i| "r#{i}" }       # line 5
        Ractor.make_shareable(strings)
      end
    end
    mine = Array.new(200_000) { |i| [i] }               # line 9
    kept = ractors.map(&:take)
    GC.start
    Memprof.stats($stdout)
    puts "mechanism=#{Memprof.mechanism}"
  RUBY

  def test_parallel_ractors_are_counted_exactly
    3.times do
      run_ruby(PARALLEL) do |out, _err, path|
        assert_includes out, "mechanism=hooks"
        stats = stats_for(out, path)
        assert_equal 200_000, stats["L5:String"], out
        assert_equal 4, stats["L5:Array"], out
        assert_equal 200_001, stats["L9:Array"], out
      end
    end
  end

  # A GC while a new Ractor makes its $stdin, $stdout and $stderr runs the GC event hooks on a
  # thread that has no frame yet, and Ruby before 3.3 crashes reading it (Ruby bug #18464):
  # the tracker's GC_END_MARK hook made that a segfault on a loaded machine, and GC.stress
  # makes it one every time. With GC.auto_compact on, the free watch (FREEOBJ) is on as well.
  def test_a_gc_while_a_ractor_starts_does_not_crash_ruby
    run_ruby(<<~'RUBY') do |out, _err, path|
      Warning[:experimental] = false
      Memprof.start
      def under_stress
        GC.stress = true
        Ractor.new { Array.new(3) { |i| "s#{i}" } }.take        # line 5
      ensure
        GC.stress = false
      end
      kept = under_stress
      GC.start
      Memprof.stats($stdout)
      GC.auto_compact = true
      kept_too = under_stress
      GC.auto_compact = false
      puts "lived"
    RUBY
      assert_equal({ "L5:Array" => 1, "L5:String" => 3 }, stats_for(out, path).select { |site, _| site.start_with?("L5:") })
      assert_equal "lived\n", out.lines.last
    end
  end

  # An allocation window (`memprof report -p PID`) sums frees through the FREEOBJ hook, which
  # Ruby before 3.3 cannot have on while a Ractor starts: a window that saw one says its counts
  # are incomplete, and a window is refused once Ractors ran. From 3.3 on both work.
  def test_an_allocation_window_and_a_ractor_start
    run_ruby(<<~'RUBY') do |out|
      Warning[:experimental] = false
      def show
        yield
        puts "ok"
      rescue Memprof::Error => e
        puts "#{e.class}: #{e.message}"
      end
      Memprof.start
      Memprof::Native.window_begin
      Ractor.new { 1 }.take
      show { Memprof::Native.window_end }
      show { Memprof::Native.window_begin }
    RUBY
      if RUBY_VERSION >= "3.3"
        assert_equal "ok\nok\n", out
      else
        version = RUBY_VERSION[/\A\d+\.\d+/]
        assert_equal <<~TEXT, out
          Memprof::Error: a Ractor started during the window, and Ruby #{version} crashes when one starts while a GC event hook is on (Ruby bug #18464, fixed in 3.3): memprof stopped watching frees, so the window's counts are incomplete
          Memprof::Error: a window watches frees through a GC event hook, and Ruby #{version} crashes when a Ractor starts while one is on (Ruby bug #18464, fixed in 3.3); this process has started Ractors
        TEXT
      end
    end
  end

  # Liveness needs a walk over the heap pages, which Ruby cannot do safely while another Ractor
  # allocates: read-outs refuse while one runs, and work once it has ended.
  def test_read_outs_refuse_while_another_ractor_runs
    run_ruby(<<~'RUBY') do |out, _err, path|
      Warning[:experimental] = false
      Memprof.start
      waiting = Ractor.new { Ractor.receive; Array.new(3) { "w" * 2 } }   # line 3
      begin
        Memprof.stats($stdout)
      rescue Memprof::Error => e
        puts "#{e.class}: #{e.message}"
      end
      waiting.send(:go)
      kept = waiting.take
      GC.start
      Memprof.stats($stdout)
    RUBY
      assert_includes out, "Memprof::Error: 2 Ractors are running: Ruby offers no safe way to walk the heap while other Ractors allocate (its page walk races with their page allocation), so memprof cannot tell which tracked objects are alive; read the results once they have finished\n"
      stats = stats_for(out, path)
      assert_equal 1, stats["L3:Array"], out
      assert_equal 3, stats["L3:String"], out
    end
  end

  # The same garbage is counted with and without a Ractor in the block, and what the Ractor
  # made and the block kept is retained.
  def test_report_of_a_block_that_runs_ractors
    run_ruby(<<~'RUBY') do |out|
      Warning[:experimental] = false
      $kept = nil
      def work(ractor)
        $kept = Ractor.new { Ractor.make_shareable(Array.new(1000) { |i| "k#{i}" }) }.take if ractor  # line 4
        Array.new(500) { |i| "garbage #{i}" }                                                        # line 5
        nil
      end
      [false, true].each do |ractor|
        report = Memprof.report { work(ractor) }
        rows = report.retained.select { |r| r.file == __FILE__ }.map { |r| "#{r.line}:#{r.class_name}=#{r.count}" }
        line5 = report.allocated.select { |r| r.file == __FILE__ && r.line == 5 }.map { |r| "#{r.class_name}=#{r.count}" }
        puts "ractor=#{ractor} retained #{rows.sort.join(' ')} allocated at 5: #{line5.sort.join(' ')}"
      end
    RUBY
      without, with = out.lines
      assert_match(/\Aractor=false retained  allocated at 5: Array=1 String=\d{3,}\n\z/, without)
      assert_equal without.sub("ractor=false retained ", "ractor=true retained 4:Array=1 4:String=1000"), with
    end
  end

  # Ruby fires the NEWOBJ event only in the Ractor that enabled it, and Ruby 3.1 crashes when
  # another Ractor allocates under it (the process used to die of a segfault here). So with
  # mechanism :tracepoint, Ractor.new raises, and tracking goes on; a start while Ractors run
  # is refused; with the hooks, Ractors still work (and, above, are counted exactly).
  def test_the_newobj_event_cannot_see_other_ractors_so_they_are_refused
    run_ruby(<<~'RUBY') do |out, _err, path|
      Warning[:experimental] = false
      def show
        puts yield
      rescue Memprof::Error => e
        puts "#{e.class}: #{e.message}"
      end
      Memprof.start(mechanism: :tracepoint)
      show { Ractor.new { 1 }.take }
      show { Memprof.track { Ractor.new { 1 }.take } }
      $kept = [Object.new]                                # line 10
      GC.start
      Memprof.stats($stdout)
      Memprof.stop
      waiting = Ractor.new { Ractor.receive }
      show { Memprof.start(mechanism: :tracepoint) }
      waiting.send(:done)
      waiting.take
      show { Memprof.start(mechanism: :tracepoint) }
      Memprof.stop
      show { Memprof.start(mechanism: :hooks) && Ractor.new { "made in a Ractor".size }.take }
    RUBY
      refused = "Memprof::Error: Ractor.new: memprof is tracking through Ruby's NEWOBJ event (mechanism :tracepoint), which Ruby fires only in the main Ractor (and Ruby 3.1 crashes when another Ractor allocates under it): stop tracking first, or track with the hooks (Memprof.start(mechanism: :hooks))\n"
      assert_equal refused, out.lines[0]
      assert_equal "Memprof::AlreadyStartedError: Memprof.track: tracking is already started (Memprof.start or an enclosing Memprof.track/report); nested tracking is not supported\n", out.lines[1]
      # Tracking went on (line 5's first puts also made $stdout's write lock, which stays).
      assert_equal({ "L10:Array" => 1, "L10:Object" => 1 }, stats_for(out, path).select { |site, _| site.start_with?("L10:") })
      assert_equal <<~TEXT, out.lines.last(3).join
        Memprof::Error: Ractors are running, and Ruby's NEWOBJ event (mechanism :tracepoint) fires only in the main Ractor: their objects would go uncounted
        true
        16
      TEXT
    end
  end
end
