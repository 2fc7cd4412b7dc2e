# frozen_string_literal: true

require_relative "test_helper"

# The public API on programs whose allocation sites are known: exact counts, formats, return
# values and the errors misuse raises.
class ApiTest < Minitest::Test
  include MemprofTestHelper

  # Lines 1-2 warm up what Ruby allocates and keeps on first use (the random seed, the Struct
  # class with its metaclass and name) so that only the program's own objects remain.
  KNOWN_SITES = <<~'RUBY'
    $kept = [rand]
    Point = Struct.new(:x)
    Memprof.start(mechanism: ARGV[0].to_sym)
    20.times { $kept << "kept-#{rand}" }           # line 4: 20 retained Strings (+20 garbage)
    10.times { $kept << [1, 2] }                   # line 5: 10 retained Arrays
    5.times { $kept << { a: 1 } }                  # line 6: 5 retained Hashes
    7.times { $kept << Point.new(1) }              # line 7: 7 retained Point
    3.times { $kept << Object.new }                # line 8: 3 retained Object
    1000.times { "garbage #{rand}" }               # line 9: garbage only
    GC.start
    Memprof.stats($stdout)
    puts "mechanism=#{Memprof.mechanism}"
    Memprof.stop
  RUBY

  # The interpolated string at line 4 makes two Strings (rand.to_s and the result); the
  # temporary is garbage, the result is kept.
  EXPECTED = {
    "L4:String" => 20, "L5:Array" => 10, "L6:Hash" => 5, "L7:Point" => 7, "L8:Object" => 3
  }.freeze

  def check_known_sites(mechanism)
    run_ruby(KNOWN_SITES, args: [mechanism]) do |out, _err, path|
      assert_includes out, "mechanism=#{mechanism}"
      stats = without_stack_survivors(stats_for(out, path), "L9:String")
      assert_equal EXPECTED, stats
      lines = out.lines.grep(/#{Regexp.escape(path)}/)
      assert_equal format("%7d %s:%d:%s\n", 20, path, 4, "String"), lines.first
      counts = lines.map { |l| Integer(l[/\d+/]) }
      assert_equal counts.sort.reverse, counts, "largest first"
    end
  end

  def test_exact_live_counts_with_hooks
    check_known_sites("hooks")
  end

  def test_exact_live_counts_with_the_newobj_fallback
    check_known_sites("tracepoint")
  end

  # Literals made by Ruby's leaf instructions (newarray, duparray, putstring, duphash) right
  # after a call on the previous line are charged to their own line, like Ruby's NEWOBJ event
  # does (the frame's program counter lags behind during leaf instructions).
  def test_literals_after_a_call_get_their_own_line
    program = <<~'RUBY'
      def f = nil
      def g
        f
        a = []
        f
        b = "lit"
        f
        c = [1, 2]
        f
        d = { k: 1 }
        [a, b, c, d]
      end
      Memprof.start(mechanism: ARGV[0].to_sym)
      p g.map { |o| Memprof::Native.site_of(o).last }
    RUBY
    %w[hooks tracepoint].each do |mechanism|
      run_ruby(program, args: [mechanism]) { |out| assert_equal "[4, 6, 8, 10]\n", out, mechanism }
    end
  end

  # Objects made by C functions (Integer#to_s, String#upcase, Array#map) are charged to the line
  # of the Ruby code that called them, also when the site comes from the cache keyed by the
  # caller's program counter: a call on one line followed by a literal on the next (the saved
  # counter points at the literal's instruction), calls through blocks, and several passes.
  def test_objects_made_by_c_functions_get_their_callers_line
    program = <<~'RUBY'
      def g(i)
        pair = [(i + 1_000_000).to_s,
                []]
        up = pair.first.upcase
        mapped = [1, 2].map { |x| (x + i + 1_000_000).to_s }
        [*pair, up, mapped, *mapped]
      end
      Memprof.start(mechanism: ARGV[0].to_sym)
      objects = Array.new(3) { |i| g(i) }.flatten(1)
      p objects.map { |o| [o.class, Memprof::Native.site_of(o).last] }
    RUBY
    hooks, tracepoint = %w[hooks tracepoint].map { |mechanism| run_ruby(program, args: [mechanism]).first }
    assert_equal tracepoint, hooks
    assert_equal [[String, 2], [Array, 3], [String, 4], [Array, 5], [String, 5], [String, 5]] * 3,
                 eval(hooks)
  end

  def test_uninitialized_classes_do_not_disturb_start
    run_ruby(<<~'RUBY') { |out, _err, path| assert_equal({ "L3:Object" => 2, "L3:Array" => 1 }, stats_for(out, path)) }
      $uninitialized = Class.allocate
      Memprof.start
      $kept = [Object.new, Object.new]   # line 3
      GC.start
      Memprof.stats($stdout)
    RUBY
  end

  def test_start_stop_return_values_and_state
    run_ruby(<<~RUBY) { |out| assert_equal "true false true true false false nil\n", out }
      a = Memprof.start
      b = Memprof.start
      c = Memprof.started?
      d = Memprof.stop
      e = Memprof.stop
      f = Memprof.started?
      puts [a, b, c, d, e, f, Memprof.mechanism.inspect].join(" ")
    RUBY
  end

  def test_stats_bang_prints_then_forgets
    run_ruby(<<~'RUBY') do |out, _err, path|
      Memprof.start
      $kept = Array.new(4) { |i| "x#{i}" * 2 }   # line 2
      GC.start
      Memprof.stats!($stdout)
      print "sep\n"
      GC.start                                    # what puts allocated is garbage
      Memprof.stats($stdout)
      print "sep\n"
      $kept << [3]                                # line 9
      GC.start
      Memprof.stats($stdout)
      Memprof.stop
    RUBY
      first, second, third = out.split("sep\n")
      # Line 2: the Array, and per element the interpolation's temporary (garbage) and the
      # product (kept).
      assert_equal({ "L2:String" => 4, "L2:Array" => 1 }, stats_for(first, path))
      assert_equal({}, without_stack_survivors(stats_for(second, path), "L5:String"))
      assert_equal({ "L9:Array" => 1 }, stats_for(third, path))
    end
  end

  def test_track_prints_stats_returns_the_value_and_stops
    run_ruby(<<~'RUBY') do |out, err, path|
      $kept = []
      value = Memprof.track do
        3.times { $kept << Object.new }   # line 3
        :done
      end
      puts "value=#{value.inspect} started=#{Memprof.started?}"
    RUBY
      assert_equal "value=:done started=false\n", out
      assert_equal({ "L3:Object" => 3 }, stats_for(err, path))
    end
  end

  def test_track_writes_to_the_given_io
    run_ruby(<<~'RUBY') { |out, err, path| assert_equal({ "L3:Array" => 2 }, stats_for(out, path)); assert_equal "", err }
      $kept = []
      Memprof.track($stdout) do
        2.times { $kept << [] }   # line 3
      end
    RUBY
  end

  def test_exception_in_track_stops_tracking_and_propagates
    run_ruby(<<~'RUBY') { |out, err| assert_equal "RuntimeError boom started=false\n", out; assert_equal "", err }
      begin
        Memprof.track { Object.new; raise "boom" }
      rescue => e
        puts "#{e.class} #{e.message} started=#{Memprof.started?}"
      end
    RUBY
  end

  def test_exception_in_report_restores_gc_and_propagates
    run_ruby(<<~'RUBY') { |out| assert_equal "ArgumentError bad started=false gc_disabled=false\n", out }
      begin
        Memprof.report { raise ArgumentError, "bad" }
      rescue => e
        disabled = GC.enable   # returns whether GC was disabled
        puts "#{e.class} #{e.message} started=#{Memprof.started?} gc_disabled=#{disabled}"
      end
    RUBY
  end

  def test_misuse_raises_clear_exceptions
    run_ruby(<<~'RUBY') do |out|
      def show
        yield
        puts "no error"
      rescue => e
        puts "#{e.class}: #{e.message}"
      end
      show { Memprof.stats }
      show { Memprof.stats! }
      show { Memprof.track }
      show { Memprof.report }
      show { Memprof.track { Memprof.track { } } }
      show { Memprof.start; Memprof.report { } }
      Memprof.stop
      show { Memprof.start(mechanism: :magic) }
      show { Memprof::Runtime.check!(engine: "jruby", version: "3.1.0", platform: "x86_64-linux") }
      show { Memprof::Runtime.check!(engine: "ruby", version: "2.6.10", platform: "x86_64-linux") }
      show { Memprof::Runtime.check!(engine: "ruby", version: "3.1.2", platform: "arm64-darwin22") }
      show { Memprof::Runtime.check!(engine: "ruby", version: "3.1.2", platform: "x86_64-linux-gnu") }
    RUBY
      assert_equal <<~TEXT, out
        Memprof::NotStartedError: Memprof.stats: tracking is not started (call Memprof.start first, or use Memprof.track)
        Memprof::NotStartedError: Memprof.stats!: tracking is not started (call Memprof.start first, or use Memprof.track)
        ArgumentError: Memprof.track needs a block
        ArgumentError: Memprof.report needs a block
        Memprof::AlreadyStartedError: Memprof.track: tracking is already started (Memprof.start or an enclosing Memprof.track/report); nested tracking is not supported
        Memprof::AlreadyStartedError: Memprof.report: tracking is already started (Memprof.start or an enclosing Memprof.track/report); nested tracking is not supported
        ArgumentError: Memprof.start: unknown mechanism :magic (expected one of :auto, :hooks, :tracepoint)
        Memprof::UnsupportedRuntimeError: memprof needs CRuby (MRI); this is jruby
        Memprof::UnsupportedRuntimeError: memprof supports Ruby 2.7 to 3.4; this is Ruby 2.6.10
        Memprof::UnsupportedRuntimeError: memprof needs x86-64 Linux; this is arm64-darwin22
        no error
      TEXT
    end
  end

  # One tracker per process: two threads reporting at once get one exact report and one
  # AlreadyStartedError, never a report of 0 objects, and GC is enabled again afterwards. (Both
  # threads used to find tracking off while the first start had released the GVL: one report
  # counted 0 objects, and GC was left disabled.)
  def test_concurrent_reports_fail_fast_and_restore_gc
    run_ruby(<<~'RUBY') do |out|
      3.times do
        results = 2.times.map do
          Thread.new do
            report = Memprof.report { sleep 0.3; $x = Array.new(10) { |i| "t#{i}" } }   # line 4
            report.allocated.select { |r| r.file == __FILE__ }.sum(&:count)
          rescue Memprof::Error => e
            e.class
          end
        end.map(&:value)
        puts "#{results.map(&:to_s).sort.join(' ')} started=#{Memprof.started?} gc_was_disabled=#{GC.enable}"
      end
    RUBY
      assert_equal "11 Memprof::AlreadyStartedError started=false gc_was_disabled=false
" * 3, out
    end
  end

  # Two threads starting at once: one true, one false, and the hooks (the second start used
  # to hook the same slots again, fail, and fall back to the NEWOBJ event). Two tracks at once:
  # one runs, the other raises AlreadyStartedError.
  def test_concurrent_starts_and_tracks_are_serialized
    run_ruby(<<~'RUBY') do |out, err|
      started = 2.times.map { Thread.new { Memprof.start } }.map(&:value)
      info = Memprof.info
      puts "#{started.map(&:to_s).sort.join(' ')} #{info[:mechanism]} #{info[:fallback_reason].inspect}"
      Memprof.stop
      tracked = 2.times.map do
        Thread.new do
          Memprof.track(File::NULL) { sleep 0.3; :tracked }
        rescue Memprof::Error => e
          e.class
        end
      end.map(&:value)
      puts "#{tracked.map(&:to_s).sort.join(' ')} started=#{Memprof.started?}"
    RUBY
      assert_equal "false true hooks nil\nMemprof::AlreadyStartedError tracked started=false\n", out
      assert_equal "", err
    end
  end

  # Signal handlers may call the API (trap("USR1") { Memprof.start } is memprof's classic use),
  # although Ruby forbids waiting for a Mutex there: the lock that serializes start and stop is
  # only tried in them.
  def test_start_stop_and_report_from_signal_handlers
    run_ruby(<<~'RUBY') { |out| assert_equal "start=true\nstop=true\nreport=1\n", out }
      trap("USR1") { $result = "start=#{Memprof.start}" }
      trap("USR2") { $result = "stop=#{Memprof.stop}" }
      trap("HUP") { $result = "report=#{Memprof.report { $kept = [1] }.total_allocated}" }
      %w[USR1 USR2 HUP].each do |signal|
        $result = nil
        Process.kill(signal, Process.pid)
        sleep 0.01 until $result
        puts $result
      end
    RUBY
  end

  # While a report block runs, its tracking is the block's: Memprof.stop and Memprof.stats!
  # (from the block or another thread) would end or empty what it counts, and are refused.
  def test_stop_and_stats_bang_are_refused_while_a_report_block_runs
    run_ruby(<<~'RUBY') do |out|
      def show
        yield
        puts "no error"
      rescue Memprof::Error => e
        puts "#{e.class}: #{e.message}"
      end
      report = Memprof.report do
        $kept = Array.new(3) { |i| "r#{i}" }          # line 8
        show { Memprof.stop }
        show { Memprof.stats!(File::NULL) }
        Thread.new { show { Memprof.stop } }.join
      end
      # (Only line 8: the block's first puts also made $stdout's write lock, which stays.)
      puts report.retained.select { |r| r.file == __FILE__ && r.line == 8 }.map { |r| "#{r.class_name}=#{r.count}" }.sort.join(" ")
      puts "started=#{Memprof.started?}"
      show { Memprof.stop }
    RUBY
      refused = "Memprof::Error: Memprof.%s: a Memprof.report block is running, and its tracking is that block's (it stops when the block ends)\n"
      assert_equal format(refused, "stop") + format(refused, "stats!") + format(refused, "stop") +
                   "Array=1 String=3\nstarted=false\nno error\n", out
    end
  end

  # After 1,000 start/stop cycles tracking is still exact, and stop has put back every byte the
  # hooks wrote (stop's own guarantee, an empty table, says neither): with a shared libruby, its
  # GOT slots of the allocation functions; with libruby linked into the executable, the
  # executable's code, where the call sites were redirected.
  def test_a_thousand_start_stop_cycles_leave_tracking_exact_and_libruby_untouched
    run_ruby(<<~'RUBY') do |out, _err, path|
      ALLOCATORS = /\b(rb_wb_protected_newobj_of|rb_wb_unprotected_newobj_of|rb_ec_wb_protected_newobj_of|rb_newobj_of|rb_data_object_wrap|rb_data_object_zalloc|rb_data_typed_object_wrap|rb_data_typed_object_zalloc)\b/
      def libruby_read_only_pages
        maps = File.readlines("/proc/self/maps").map(&:split)
        libruby = maps.map { |m| m[5] }.compact.find { |p| File.basename(p).start_with?("libruby") }
        File.open("/proc/self/mem", "rb") do |mem|
          read = ->(from, size) { mem.seek(from); mem.read(size) }
          if libruby
            base = maps.find { |m| m[5] == libruby && m[2].hex.zero? }[0].split("-").first.hex
            slots = `readelf -rW #{libruby}`.lines.grep(ALLOCATORS).map { |l| l.split.first.hex }
            raise "no GOT slot of the allocation functions in #{libruby}" if slots.empty?
            slots.map { |slot| read.(base + slot, 8) }.join
          else
            # By address: patching splits the mapping where page protections changed.
            exe = File.realpath("/proc/self/exe")
            ranges = maps.select { |m| m[5] == exe && m[1] == "r-xp" }.map { |m| m[0].split("-").map(&:hex) }
            read.(ranges.first[0], ranges.last[1] - ranges.first[0])
          end
        end
      end
      original = libruby_read_only_pages
      1000.times do |i|
        Memprof.start
        $last = "cycle #{i}"
        Memprof.stop
      end
      Memprof.start
      $kept = []                           # line 27
      4.times { $kept << Object.new }      # line 28
      3.times { $kept << [1] }             # line 29
      2.times { $kept << "x" * 3 }         # line 30: "x" is garbage, the product kept
      GC.start
      Memprof.stats($stdout)
      hooked = libruby_read_only_pages != original
      puts "mechanism=#{Memprof.mechanism}"
      Memprof.stop
      puts "hooked=#{hooked} restored=#{libruby_read_only_pages == original}"
    RUBY
      assert_equal({ "L27:Array" => 1, "L28:Object" => 4, "L29:Array" => 3, "L30:String" => 2 },
                   stats_for(out, path))
      assert_equal "mechanism=hooks\nhooked=true restored=true\n", out.lines.last(2).join
    end
  end
end
