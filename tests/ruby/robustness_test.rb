# frozen_string_literal: true

require_relative "test_helper"

# Tracking stays exact across slot reuse, GC.compact, Ruby threads and fork, and the hooks see
# every allocation Ruby's NEWOBJ event reports for the tracked types.
class RobustnessTest < Minitest::Test
  include MemprofTestHelper

  # T_OBJECT, T_CLASS, T_MODULE, T_FLOAT, T_STRING, T_REGEXP, T_ARRAY, T_HASH, T_STRUCT,
  # T_BIGNUM, T_FILE, T_DATA, T_MATCH, T_COMPLEX, T_RATIONAL, T_SYMBOL (src/ruby/tracked_types.h)
  TRACKED = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20].freeze

  # The checkout's lib/memprof/memprof.so is the machine Ruby's: another Ruby loading it failed
  # with "linked to incompatible libruby-3.1.so" and no word on what to do.
  def test_an_extension_built_for_another_ruby_is_refused_with_what_to_do
    skip "the checkout's extension is this Ruby's" unless ENV["MEMPROF_EXT_DIR"]

    _, err, status = Open3.capture3(RbConfig.ruby, "-I", LIB, "-r", "memprof", "-e", "1")
    refute status.success?
    assert_match(/memprof's extension does not load into this Ruby \(#{Regexp.escape(RUBY_VERSION)}\): .*memprof\.so; it is built for one Ruby: gem build memprof\.gemspec && gem install memprof-\*\.gem with this Ruby builds it for this one \(LoadError\)/, err)
  end

  def test_hooks_cover_every_newobj_event_of_the_tracked_types
    run_ruby(<<~'RUBY') do |out|
      require "set"
      require "json"
      Memprof::Native.coverage_begin(5_000_000)
      begin
        x = []
        2000.times do |i|
          x << "s#{i}" << [i] << { a: i } << Object.new << Struct.new(:a).new(1) << Time.now
          x << Rational(i, 3) << Complex(i, 1) << (2**70 + i) << /a#{i}/ << "ab".match(/a/) << 1.0 / 3
          x << :"dyn#{i}".to_proc rescue nil
        end
        Set.new([1, 2]); Class.new; Module.new; Class.new(StandardError).new("e")
        File.open(__FILE__) { |f| f.read }
        Thread.new { [1, "t"] }.join
        Marshal.load(Marshal.dump([Object.new, "x", { a: 1 }]))
        JSON.parse('{"a":[1,2,{"b":"c"}]}')
        begin; nil.foo; rescue NoMethodError; end
        begin; raise "boom"; rescue RuntimeError; end
        Object.new.dup; Object.new.clone; Object.allocate; "x".dup
        Enumerator.new { |y| y << 1 }.to_a; (1..3).each_slice(2).to_a
      ensure
        coverage = Memprof::Native.coverage_end
      end
      coverage.each { |type, events, hooked| puts "#{type} #{events} #{hooked}" }
    RUBY
      rows = out.lines.map { |l| l.split.map(&:to_i) }
      by_type = rows.to_h { |type, events, hooked| [type, [events, hooked]] }
      [1, 5, 7, 8, 9, 12].each do |type|
        assert by_type.key?(type), "no NEWOBJ event of type #{type} in the workload"
      end
      TRACKED.each do |type|
        next unless by_type[type]
        events, hooked = by_type[type]
        assert_equal events, hooked, "type #{type}: #{events} NEWOBJ events, #{hooked} seen by the hooks"
      end
    end
  end

  # A slot freed by GC and reused by a seen allocation of another site and class takes the
  # new site; a slot reused by an untracked type (T_IMEMO: procs' environments) is dead.
  def test_slot_reuse_never_credits_the_old_site
    run_ruby(<<~'RUBY', env: { "RUBYOPT" => "-robjspace" }) do |out, _err, path|
      def reuses(arrays, addresses) = (arrays.map { |a| ObjectSpace.dump(a)[/0x\h+/] } & addresses).size
      Memprof.start
      old = Array.new(40_000) { |i| "old #{i}" }      # line 3
      $half = old.values_at(*(0...40_000).step(2))    # line 4: every other String stays, so
      dead = old - $half                              # line 5: their pages stay in the heap
      addresses = dead.map { |s| ObjectSpace.dump(s)[/0x\h+/] }   # line 6
      old = dead = nil
      GC.start
      reused = []                                     # line 9: Arrays until some take a freed slot
      20_000.times { |i| reused << [i] } while reused.size < 400_000 && reuses(reused, addresses).zero?
      envs = Array.new(20_000) { |i| -> { i } }       # line 11: procs + their imemo envs
      GC.start
      Memprof.stats($stdout)
      puts "arrays=#{reused.size} reused=#{reuses(reused, addresses)}"
      Memprof.stop
    RUBY
      # Line 3 keeps the even Strings (through $half, line 4's Array); line 6 made the addresses
      # (Strings in an Array; $~ keeps the last MatchData and its copy of the matched String).
      # The odd Strings are dead, and some of their slots went to line 10's Arrays. (How many
      # Arrays it takes before one does depends on the Ruby version's heap.) Line 1 is the test's
      # own measuring, whose last result a stale stack word may keep alive.
      arrays = out[/arrays=(\d+)/, 1].to_i
      assert_equal({ "L3:String" => 20_000, "L4:Array" => 1, "L6:Array" => 1, "L6:String" => 20_001,
                     "L6:MatchData" => 1, "L9:Array" => 1, "L10:Array" => arrays, "L11:Proc" => 20_000,
                     "L11:Array" => 1 },
                   stats_for(out, path).reject { |site, _| site.start_with?("L1:") })
      assert_operator out[/reused=(\d+)/, 1].to_i, :>, 0, "the test needs slots to be reused"
    end
  end

  def test_gc_compact_keeps_sites_exact
    run_ruby(<<~'RUBY') do |out, _err, path|
      Memprof.start
      garbage = Array.new(30_000) { |i| "garbage #{i}" }   # line 2
      kept = Array.new(5_000) { |i| "kept #{i}" }          # line 3
      hashes = Array.new(3_000) { |i| { i => i } }         # line 4
      garbage = nil
      moved = GC.compact[:moved]   # GC.latest_compact_info (object ids never change on a move)
      GC.start
      Memprof.stats($stdout)
      site = Memprof::Native.site_of(kept[4_999])
      puts "site=#{File.basename(site[0])}:#{site[1]}"
      puts "lost=#{Memprof.info[:lost_to_compaction]}"
      puts "moved_strings=#{moved[:T_STRING].to_i}"
      Memprof.stop
    RUBY
      stats = stats_for(out, path)
      assert_operator out[/moved_strings=(\d+)/, 1].to_i, :>, 0, "the test needs GC.compact to move tracked objects"
      assert_equal 5_000, stats["L3:String"]
      assert_equal 3_000, stats["L4:Hash"]
      assert_nil stats["L2:String"]
      assert_includes out, "site=program.rb:3\n"
      assert_includes out, "lost=0\n"
    end
  end

  def test_ruby_threads_are_tracked_exactly
    run_ruby(<<~'RUBY') do |out, _err, path|
      $kept = Queue.new
      Memprof.start
      threads = 4.times.map do |t|
        Thread.new do
          500.times { |i| $kept << "t#{t}-#{i}" }   # line 5
          250.times { $kept << [t] }                # line 6
        end
      end
      threads.each(&:join)
      threads = nil
      GC.start
      Memprof.stats($stdout)
      Memprof.stop
    RUBY
      stats = stats_for(out, path)
      assert_equal 2_000, stats["L5:String"]
      assert_equal 1_000, stats["L6:Array"]
    end
  end

  # Preforking servers load the app, then fork workers: a worker must still see (and
  # attribute) what was allocated before the fork, and keep tracking its own allocations.
  FORK = <<~'RUBY'
    $kept = [$stdout.write("start\n")]    # $stdout makes its write lock before tracking
    Memprof.start(fork: ARGV[0].to_sym)
    100.times { $kept << Object.new }      # line 3
    pid = fork do
      7.times { $kept << [1] }             # line 5
      print "child\n"
      GC.start
      Memprof.stats($stdout)
      $stdout.flush
    end
    Process.wait(pid)                      # line 11: $? keeps a Process::Status
    print "parent\n"
    GC.start
    Memprof.stats($stdout)
    Memprof.stop
  RUBY

  def test_forked_child_keeps_what_the_parent_tracked_and_keeps_tracking
    run_ruby(FORK, args: ["keep"]) do |out, _err, path|
      child, parent = out.split("parent\n")
      assert_equal({ "L3:Object" => 100, "L5:Array" => 7 }, stats_for(child, path))
      assert_equal({ "L3:Object" => 100, "L11:Process::Status" => 1 }, stats_for(parent, path))
    end
  end

  # A worker forked inside a track block inherits its tracking, but not the block: it may stop
  # tracking (it raised "a Memprof.track block is running" in the child, which never ends the
  # block), while the parent's block still refuses.
  def test_a_child_forked_inside_a_track_block_can_stop_tracking
    run_ruby(<<~'RUBY') do |out, _err|
      Memprof.track(File::NULL) do
        reader, writer = IO.pipe
        pid = fork do
          reader.close
          writer.write([Memprof.stop, Memprof.started?].inspect)
          exit!(0)
        end
        writer.close
        Process.wait(pid)
        puts "child: #{reader.read}"
        begin
          Memprof.stop
        rescue Memprof::Error => e
          puts "parent: #{e.message}"
        end
      end
    RUBY
      assert_equal "child: [true, false]\nparent: Memprof.stop: a Memprof.track block is running, and its " \
                   "tracking is that block's (it stops when the block ends)\n", out
    end
  end

  # A compaction memprof could not follow empties the table (it cannot tell moved-in objects
  # from tracked ones): the next read-out says how many objects were lost, once.
  def test_objects_lost_to_a_compaction_memprof_could_not_follow_are_said_once
    run_ruby(<<~'RUBY') do |out, err|
      Memprof.start
      $kept = Array.new(1000) { Object.new }
      GC.method(:compact).super_method.call  # around memprof's wrapper of GC.compact
      Memprof.stats(File::NULL)
      Memprof.stats(File::NULL)
      print Memprof.info[:lost_to_compaction]
    RUBY
      assert_operator Integer(out), :>=, 1001
      assert_equal "memprof: Memprof.stats: #{out} tracked objects were forgotten at a GC compaction memprof " \
                   "could not follow (other Ractors running, or GC.compact called around memprof's wrapper); " \
                   "they are missing from this read-out and the later ones\n", err
    end
  end

  def test_forked_child_starts_empty_when_asked
    run_ruby(FORK, args: ["reset"]) do |out, _err, path|
      child, parent = out.split("parent\n")
      assert_equal({ "L5:Array" => 7 }, stats_for(child, path))
      assert_equal({ "L3:Object" => 100, "L11:Process::Status" => 1 }, stats_for(parent, path))
    end
  end

  # A process at its address-space limit (ulimit -v, RLIMIT_AS): C++ ran out of memory inside
  # Memprof.start (reading /proc/self/maps to patch a GOT slot), and the std::bad_alloc crossed
  # Ruby's frames: "terminate called", the process aborted. Each start now succeeds or raises
  # NoMemoryError (or Memprof::Error), leaves no page writable and executable, and memprof works
  # once there is room again. (3 of these starts run out of memory on Debian's 3.1, 15-28 on
  # 3.4, where one did so without the GVL and Ruby's check of rb_memerror aborted; 3.3 finds
  # what it needs in memory it already has.)
  def test_memprof_start_at_the_address_space_limit_raises_instead_of_aborting
    run_ruby(<<~'RUBY') do |out|
      outcomes = Hash.new(0)
      mapped = File.read("/proc/self/status")[/^VmSize:\s+(\d+)/, 1].to_i * 1024
      writable_code = 0
      (0..100).each do |step|
        # Free slots first: a heap page Ruby itself needs under the limit fails inside its VM
        # lock, where Ruby 3.4 cannot raise and exits ("[FATAL] failed to allocate memory";
        # once in about 60 runs, in a full `make test`). The limit is for memprof's memory.
        GC.start
        Process.setrlimit(:AS, mapped - (4 << 20) + step * 128 * 1024, Process::RLIM_INFINITY)
        begin
          Memprof.start
          outcomes["started"] += 1
        rescue NoMemoryError, Memprof::Error => e
          outcomes[e.class.name] += 1
        ensure
          Process.setrlimit(:AS, Process::RLIM_INFINITY, Process::RLIM_INFINITY)
        end
        Memprof.stop if Memprof.started?
        writable_code += File.readlines("/proc/self/maps").count { |line| line.split[1] == "rwxp" }
      end
      Memprof.start
      kept = Array.new(300) { Object.new }
      puts "rwx #{writable_code}"
      $stderr.puts outcomes.inspect
      Memprof.stats($stdout)
    RUBY
      lines = out.lines.map(&:strip)
      assert_equal "rwx 0", lines[0]
      assert_equal 1, lines.count { |line| line.match?(/\A300 \S*program\.rb:\d+:Object\z/) }, out
    end
  end
end
