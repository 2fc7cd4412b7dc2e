# frozen_string_literal: true

require_relative "test_helper"

# Memprof.report's numbers and formats; Memprof.dump and Memprof.dump_all output (JSON lines
# that Debian's heapy reads).
class ReportAndDumpTest < Minitest::Test
  include MemprofTestHelper

  # Report#write_pprof runs the command-line tool (MEMPROF_CLI: this build's); go tool pprof
  # reads the file back with the report's numbers.
  def test_report_as_pprof
    run_ruby(<<~'RUBY', env: { "MEMPROF_CLI" => ENV.fetch("MEMPROF_CLI") }) do |out, _err, path|
      $kept = []
      report = Memprof.report do
        10.times { |i| $kept << [i] }          # line 3: 10 Arrays retained
        25.times { |i| [i, i] }                # line 4: 25 Arrays garbage
      end
      puts report.write_pprof(File.join(__dir__, "report.pb.gz"))
    RUBY
      file = out.strip
      assert_equal File.join(File.dirname(path), "report.pb.gz"), file
      go = ENV.fetch("PATH", "").split(":").map { |dir| File.join(dir, "go") }.find { |f| File.executable?(f) }
      skip "go (Debian's golang-go) is not installed" unless go
      Dir.mktmpdir do |home|
        traces = lambda do |index|
          text, err, status = Open3.capture3({ "HOME" => home, "GOCACHE" => File.join(home, "cache") }, go, "tool",
                                             "pprof", "-traces", "-sample_index=#{index}", file)
          assert status.success?, err
          text.split(/^-+\+-+$/).drop(1).filter_map do |block|
            lines = block.lines.map(&:strip).reject(&:empty?)
            [[lines[0].split(/\s+/, 2)[1], lines[1].sub("#{path}:", "L")], Integer(lines[0].split.first)] unless lines.empty?
          end.to_h
        end
        assert_equal({ %w[Array L3] => 10, %w[Array L4] => 0 }, traces.("inuse_objects"))
        assert_equal({ %w[Array L3] => 10, %w[Array L4] => 25 }, traces.("alloc_objects"))
      end
    end
  end

  def test_report_counts_allocated_and_retained_exactly
    run_ruby(<<~'RUBY') do |out, _err, path|
      # frozen_string_literal: true
      $kept = []
      report = Memprof.report do
        10.times { |i| $kept << [i] }          # line 4: 10 Arrays retained
        25.times { |i| [i, i] }                # line 5: 25 Arrays garbage
        3.times { $kept << Object.new }        # line 6
        4.times { |i| "s#{i}" }                # line 7: 4 Strings garbage
      end
      puts report.to_json
      puts Memprof.started?
    RUBY
      json, started = out.lines
      assert_equal "false\n", started
      h = JSON.parse(json)
      rows = ->(kind) { h[kind]["by_location"].map { |r| [r["location"].sub("#{path}:", "L"), r["class"], r["count"]] } }
      assert_equal [["L5", "Array", 25], ["L4", "Array", 10], ["L7", "String", 4], ["L6", "Object", 3]], rows.("allocated")
      assert_equal [["L4", "Array", 10], ["L6", "Object", 3]], rows.("retained")
      assert_equal 42, h["allocated"]["objects"]
      assert_equal 13, h["retained"]["objects"]
      # Bytes are ObjectSpace.memsize_of at the block's end: 40 per embedded Array/Object/String.
      assert_equal 42 * 40, h["allocated"]["bytes"]
      assert_equal [{ "name" => "Array", "count" => 35, "bytes" => 1400 }, { "name" => "String", "count" => 4, "bytes" => 160 },
                    { "name" => "Object", "count" => 3, "bytes" => 120 }], h["allocated"]["by_class"]
      assert_equal [{ "name" => "other", "count" => 13, "bytes" => 520 }], h["retained"]["by_gem"]
    end
  end

  def test_report_print_is_memory_profiler_style_text
    run_ruby(<<~'RUBY') do |out, _err, path|
      # frozen_string_literal: true
      $kept = []
      report = Memprof.report { 2.times { $kept << Object.new } }   # line 3
      report.print($stdout, top: 5)
    RUBY
      assert out.start_with?("Total allocated: 80 bytes (2 objects)\nTotal retained:  80 bytes (2 objects)\n\n" \
                             "allocated memory by gem\n-----------------------------------\n        80  other\n"), out
      assert_includes out, "retained objects by location\n-----------------------------------\n         2  #{path}:3\n"
      assert_includes out, "retained objects by class\n-----------------------------------\n         2  Object\n"
      assert_equal 16, out.scan(/^-{35}$/).size
    end
  end

  # memory_profiler's results are printed with pretty_print(to_file:, scale_bytes:,
  # detailed_report:): a user switching to Memprof.report writes the same call (before: a
  # NoMethodError, from pp's pretty_print, which takes a printer). `pp report` still works.
  def test_report_pretty_print_takes_memory_profiler_options
    path = File.join(Dir.tmpdir, "memprof-pretty-#{Process.pid}.txt")
    run_ruby(<<~RUBY) do |out|
      require "stringio"
      require "pp"
      $kept = []
      report = Memprof.report { 2.times { $kept << Array.new(300, 1) } }
      report.pretty_print(scale_bytes: true, top: 1)
      puts "--"
      report.pretty_print(detailed_report: false)
      io = StringIO.new
      report.print(io)
      report.pretty_print(to_file: #{path.inspect})
      puts File.read(#{path.inspect}) == io.string ? "same" : "differs"
      begin
        report.pretty_print(allocated_strings: 5, normalize_paths: true)
      rescue ArgumentError => e
        puts e.message
      end
      puts PP.pp(report, +"").start_with?("#<Memprof::Report")
    RUBY
      bytes = 2 * 2440 # two Arrays of 300 references: 40 + 300 * 8 each
      assert out.start_with?("Total allocated: 4.88 kB (2 objects)\nTotal retained:  4.88 kB (2 objects)\n\n" \
                             "allocated memory by gem\n-----------------------------------\n   4.88 kB  other\n"), out
      assert_includes out, "retained objects by class\n-----------------------------------\n         2  Array\n--\n"
      assert_includes out, "--\nTotal allocated: #{bytes} bytes (2 objects)\nTotal retained:  #{bytes} bytes (2 objects)\nsame\n"
      assert_includes out, "Memprof::Report#pretty_print: memprof does not take allocated_strings, normalize_paths " \
                           "(it takes to_file, scale_bytes, detailed_report and top)\ntrue\n"
    end
  ensure
    File.delete(path) if path && File.exist?(path)
  end

  # `out` is an IO or a path, as everywhere in the API. Before: a path raised NoMethodError
  # ("private method `puts' called for String").
  def test_report_print_writes_to_a_path
    path = File.join(Dir.tmpdir, "memprof-print-#{Process.pid}.txt")
    run_ruby(<<~RUBY) do |out|
      require "stringio"
      require "pathname"
      report = Memprof.report { Object.new }
      io = StringIO.new
      report.print(io, top: 3)
      report.print(#{path.inspect}, top: 3)
      puts File.read(#{path.inspect}) == io.string ? "same" : "differs"
      report.print(Pathname(#{path.inspect}), top: 3)
      puts File.read(#{path.inspect}) == io.string ? "same" : "differs"
      sink = Object.new
      def sink.puts(text) = (@text = text)
      def sink.text = @text
      report.print(sink, top: 3)
      puts sink.text == io.string ? "same" : "differs"
      begin
        report.print(42)
      rescue TypeError => e
        puts e.message
      end
      begin
        report.print("/nonexistent-dir/x.txt")
      rescue Errno::ENOENT => e
        puts e.message
      end
    RUBY
      assert_equal <<~TEXT, out
        same
        same
        same
        Memprof::Report#print: expected an IO or a path (String or Pathname), got Integer
        No such file or directory - Memprof::Report#print: cannot write /nonexistent-dir/x.txt
      TEXT
    end
  ensure
    File.delete(path) if path && File.exist?(path)
  end

  # `top:` is checked with a message that names it (a negative one used to raise "negative
  # array size" from deep inside); 0 prints the totals and the section titles only.
  def test_report_print_checks_top
    run_ruby(<<~'RUBY') do |out|
      require "stringio"
      report = Memprof.report { Object.new }
      [-1, 2.5, "5", nil].each do |top|
        report.print(StringIO.new, top: top)
        puts "no error"
      rescue ArgumentError => e
        puts "#{e.class}: #{e.message}"
      end
      io = StringIO.new
      report.print(io, top: 0)
      puts "top 0: #{io.string.lines.size} lines"
    RUBY
      assert_equal <<~TEXT, out
        ArgumentError: Memprof::Report#print: top must be an Integer >= 0, not -1
        ArgumentError: Memprof::Report#print: top must be an Integer >= 0, not 2.5
        ArgumentError: Memprof::Report#print: top must be an Integer >= 0, not "5"
        ArgumentError: Memprof::Report#print: top must be an Integer >= 0, not nil
        top 0: 50 lines
      TEXT
    end
  end

  def test_dump_adds_the_allocation_site
    run_ruby(<<~'RUBY') do |out, _err, path|
      Memprof.start
      s = "dumped " * 3        # line 2
      Memprof.dump(s)
      Memprof.stop
      Memprof.dump(s)          # not tracked any more
    RUBY
      tracked, untracked = out.lines.map { |l| JSON.parse(l) }
      assert_equal "STRING", tracked["type"]
      assert_equal "dumped dumped dumped ", tracked["value"]
      assert_equal [path, 2], [tracked["file"], tracked["line"]]
      assert_nil untracked["file"]
      assert_equal tracked["address"], untracked["address"]
    end
  end

  def test_dump_all_is_json_lines_with_sites_that_heapy_reads
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY) do |out, _err, path|
        Memprof.start
        $kept = Array.new(300) { |i| "kept \#{i}" }   # line 2
        Memprof.dump_all(#{dump.inspect})
        Memprof.stop
        puts "ok"
      RUBY
        assert_equal "ok\n", out
        lines = File.readlines(dump)
        objects = lines.map { |l| JSON.parse(l) }   # every line is one JSON object
        assert_operator objects.size, :>, 1000
        at_line2 = objects.select { |o| o["file"] == path && o["line"] == 2 }
        # The 300 kept Strings and their Array; the interpolations' temporaries ("0".."299")
        # are garbage, some of them swept already.
        kept = at_line2.select { |o| o["type"] == "ARRAY" || o["value"]&.start_with?("kept ") }
        assert_equal({ "STRING" => 300, "ARRAY" => 1 }, kept.map { |o| o["type"] }.tally)
        assert at_line2.all? { |o| o["type"] == "ARRAY" || o["value"].match?(/\A(kept )?\d+\z/) }
        assert objects.any? { |o| o["type"] == "ROOT" }
        heapy, status = Open3.capture2e("heapy", "read", dump)
        assert status.success?, heapy
        assert_match(/Heap total.*Count: #{lines.size}\b/m, heapy)
      end
    end
  end

  # The generation written is the GC count at the allocation, as ObjectSpace's allocation
  # tracing writes it (`memprof diff` compares the two kinds of dump alike), and survives a
  # GC.compact that moves the object.
  def test_dumps_carry_the_allocation_generation_that_objectspace_would_write
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY) do |out, _err, path|
        Memprof.start
        $early = Array.new(100) { Object.new }                   # line 2
        early = GC.count
        3.times { GC.start }
        $late = Array.new(100) { Object.new }                    # line 5
        late = GC.count
        GC.compact if GC.respond_to?(:compact)
        Memprof.dump($late.first)
        Memprof.dump_all(#{dump.inspect})
        puts [early, late].inspect
      RUBY
        lines = out.lines
        early, late = JSON.parse(lines.pop)
        assert_operator late, :>=, early + 3
        assert_equal late, JSON.parse(lines.first)["generation"]
        objects = File.foreach(dump).filter_map do |line|
          object = JSON.parse(line)
          object if object["file"] == path && object["type"] == "OBJECT"
        end
        assert_equal({ [2, early] => 100, [5, late] => 100 },
                     objects.map { |o| [o["line"], o["generation"]] }.tally)
      end
    end
  end

  # ObjectSpace.trace_object_allocations { } leaves its table's entries when it ends, and a new
  # object in the slot of one freed since shows that object's site: dump_all and dump kept
  # Ruby's fields where they were written, and charged ~90% of these Strings to line 1.
  def test_dumps_write_memprofs_site_over_a_stale_one_of_rubys_tracing
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY) do |out, _err, path|
        ObjectSpace.trace_object_allocations { 20_000.times.map { |i| "tmp\#{i}" } }
        GC.start
        Memprof.start
        $leak = Array.new(5_000) { |i| "leak\#{i}" }            # line 4
        made = GC.count
        GC.start
        Memprof.dump($leak.last)
        Memprof.dump_all(#{dump.inspect})
        puts made
      RUBY
        lines = out.lines
        made = Integer(lines.pop)
        one = JSON.parse(lines.first)
        assert_equal [path, 4, made], [one["file"], one["line"], one["generation"]]
        leaked = File.foreach(dump).filter_map do |line|
          object = JSON.parse(line)
          object if object["type"] == "STRING" && object["value"]&.match?(/\Aleak\d+\z/)
        end
        assert_equal({ [path, 4, made, nil] => 5_000 },
                     leaked.map { |o| [o["file"], o["line"], o["generation"], o["method"]] }.tally)
      end
    end
  end

  # Retained means reachable after the block: garbage the block's own deep calls left in stack
  # memory, and the block's value (dropped, as memory_profiler drops it), are not retained.
  def test_garbage_of_a_block_is_not_retained
    run_ruby(<<~'RUBY') do |out|
      require "erb"
      def rec(n, acc) = n.zero? ? acc : rec(n - 1, acc << "s#{n}")
      ERB.new("warm up <%= 1 %>")
      accumulator = Memprof.report { rec(9000, []).size }
      erb = Memprof.report { ERB.new("<%= 1 %> hello <% 3.times do %>x<% end %>") }
      value = Memprof.report { Array.new(100) { |i| "v#{i}" } }
      [accumulator, erb, value].each { |r| puts "#{r.total_allocated} #{r.total_retained}" }
    RUBY
      accumulator, erb, value = out.lines.map { |l| l.split.map(&:to_i) }
      assert_equal [17_992, 0], accumulator   # 9000 Strings, their 8991 "n" Strings, the Array
      assert_operator erb[0], :>, 50
      assert_equal 0, erb[1]
      assert_equal [1 + 100 + 90, 0], value    # the Array, 100 Strings, 90 two-digit "i" Strings
    end
  end

  # The frame that runs the block stays active through the final GC, which reads it
  # conservatively. A slot of it that was never written held what earlier calls had left there:
  # in some processes the address of an object that had died, whose slot one of the block's
  # Strings then took -- and that garbage String was reported retained (Ruby 3.3-static, 9 to
  # 16 fresh processes in 150). The stale words come from each program's start: 30 fresh processes.
  def test_no_garbage_of_a_block_is_retained_in_any_fresh_process
    retained = 30.times.map do
      out, = run_ruby(<<~'RUBY')
        def work = Array.new(500) { |i| "garbage #{i}" }.size
        report = Memprof.report { work }
        puts report.retained.count { |row| row.file == __FILE__ }
      RUBY
      Integer(out)
    end
    assert_equal [0] * 30, retained
  end

  # `class Foo` makes two classes: Foo and its singleton class, shown as #<Class:Foo>; a
  # singleton class of an object is shown by the object's class, that of an anonymous class as
  # #<Class:#<Class>>.
  def test_singleton_classes_are_named_for_what_they_belong_to
    run_ruby(<<~'RUBY') do |out, _err, path|
      Memprof.start
      class Foo; end                    # line 2
      module Bar; end                   # line 3
      $o = Object.new                   # line 4
      $s = $o.singleton_class           # line 5
      $c = Class.new                    # line 6
      GC.start
      Memprof.stats($stdout)
    RUBY
      assert_equal({ "L2:Class" => 1, "L2:#<Class:Foo>" => 1, "L3:Module" => 1, "L4:Object" => 1,
                     "L5:#<Class:#<Object>>" => 1, "L6:Class" => 1, "L6:#<Class:#<Class>>" => 1 },
                   stats_for(out, path))
    end
  end

  def test_dump_of_a_block_writes_what_it_allocated
    Dir.mktmpdir("memprof-dump") do |dir|
      file = File.join(dir, "block.json")
      run_ruby(<<~RUBY) do |out, _err, path|
        value = Memprof.dump { [Object.new, "x" * 3] }      # line 1
        require "pathname"
        p value.size
        Memprof.dump(#{file.inspect}) { { a: [1] } }        # line 4
        Memprof.dump(Pathname(#{file.inspect}).sub_ext(".2.json")) { :sym.to_proc }
      RUBY
        first, count = out.lines.partition { |l| l.start_with?("{") }
        assert_equal ["2\n"], count
        sites = ->(lines) { lines.map { |l| o = JSON.parse(l); [o["type"], o["file"] == path ? o["line"] : o["file"]] }.sort }
        assert_equal [["ARRAY", 1], ["OBJECT", 1], ["STRING", 1], ["STRING", 1]], sites.(first)
        assert_equal [["ARRAY", 4], ["HASH", 4]], sites.(File.readlines(file))
        assert File.exist?(file.sub(".json", ".2.json"))
      end
    end
  end

  def test_dump_all_takes_a_pathname_or_an_io_and_names_the_users_path_in_errors
    Dir.mktmpdir("memprof-dump") do |dir|
      run_ruby(<<~RUBY) do |out|
        require "pathname"
        require "stringio"
        Memprof.start
        $kept = ["site of this string"]            # line 4
        Memprof.dump_all(Pathname(#{dir.inspect}) / "a.json")
        io = StringIO.new
        Memprof.dump_all(io)
        File.write(#{File.join(dir, "b.json").inspect}, io.string)
        begin
          Memprof.dump_all(#{File.join(dir, "missing", "c.json").inspect})
        rescue SystemCallError => e
          puts "\#{e.class}: \#{e.message}"
        end
        begin
          Memprof.dump_all(42)
        rescue TypeError => e
          puts "\#{e.class}: \#{e.message}"
        end
        puts Dir.children(#{dir.inspect}).sort.join(" ")
      RUBY
        assert_equal <<~TEXT, out
          Errno::ENOENT: No such file or directory - Memprof.dump_all: cannot write #{File.join(dir, "missing", "c.json")}
          TypeError: Memprof.dump_all: expected an IO or a path (String or Pathname), got Integer
          a.json b.json
        TEXT
        %w[a.json b.json].each do |name|
          copies = File.readlines(File.join(dir, name)).map { |l| JSON.parse(l) }.select { |o| o["value"] == "site of this string" }
          # The program's String at line 4; the literal it was copied from and the parser's
          # copies were made before tracking.
          assert_equal [4], copies.map { |o| o["line"] }.compact, name
        end
      end
    end
  end

  # The scratch file beside the path has a name others can guess (.NAME.PID.partial): in a
  # shared directory someone may plant a link there. dump_all refuses to write through it
  # instead of truncating the file it points to.
  def test_dump_all_does_not_write_through_a_link_planted_at_its_scratch_name
    Dir.mktmpdir("memprof-dump") do |dir|
      victim = File.join(dir, "victim.txt")
      File.write(victim, "precious")
      run_ruby(<<~RUBY) do |out|
        File.symlink(#{victim.inspect}, File.join(#{dir.inspect}, ".heap.json.\#{Process.pid}.partial"))
        begin
          Memprof.dump_all(#{File.join(dir, "heap.json").inspect})
        rescue SystemCallError => e
          puts "\#{e.class}: \#{e.message}"
        end
      RUBY
        heap = File.join(dir, "heap.json")
        # Named: the user's path does not exist, the scratch file does.
        assert_match(/\AErrno::EEXIST: File exists - Memprof.dump_all: cannot write #{Regexp.escape(heap)}: its scratch file #{Regexp.escape(dir)}\/.heap.json.\d+.partial exists/, out)
      end
      assert_equal "precious", File.read(victim)
      refute File.exist?(File.join(dir, "heap.json"))
    end
  end

  # memprof's own objects are not the app's: the File a dump is written through is alive in the
  # dump, and was annotated at lib/memprof.rb, so every diff of two dumps listed it as a leak.
  def test_dump_all_annotates_no_object_at_memprofs_own_lines
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY)
        Memprof.start
        $kept = Array.new(10) { "kept" }
        Memprof.dump_all(#{dump.inspect})
      RUBY
      lib = File.expand_path("../../lib", __dir__)
      assert_equal [], File.foreach(dump).select { |line| line.include?(%("file":"#{lib}/)) }
      assert_equal 10, File.foreach(dump).count { |l| l.include?('"value":"kept"') && l.include?('"line":2,') }
    end
  end

  # A diff of two dumps with nothing allocated in between listed ~20 objects (9.5 kB) as new: the
  # second dump's File, its mutex and paths, and the call caches the first dump's code filled
  # after the first dump was written. Those are marked "memprof_own" and `memprof diff` leaves
  # them out, so it shows exactly what the program made.
  def test_a_diff_of_dumps_leaves_out_the_objects_dump_all_made_itself
    assert_dumps_differ_by_what_the_program_made("")
  end

  # The same where the dumps are written by forked children (Ruby 3.1-3.3 beside a thread):
  # what the parent makes around the fork is carried to the next dump's own objects.
  def test_a_diff_of_dumps_written_beside_a_thread_leaves_out_the_objects_dump_all_made
    assert_dumps_differ_by_what_the_program_made(<<~RUBY)
      started = Queue.new
      Thread.new { started << true; sleep }
      started.pop
    RUBY
  end

  def assert_dumps_differ_by_what_the_program_made(preamble)
    Dir.mktmpdir("memprof-dump") do |dir|
      dumps = (1..3).map { |i| File.join(dir, "#{i}.json") }
      run_ruby(<<~RUBY)
        #{preamble}
        Memprof.start  # allocation generations: the diff decides every object exactly
        def make(count) = Array.new(count) { Object.new }
        make(1)
        $kept = []
        #{dumps.inspect}.each_with_index do |dump, i|
          $kept.concat(make(i == 2 ? 500 : 0))
          Memprof.dump_all(dump)
        end
      RUBY
      diff = lambda do |a, b|
        out, status = Open3.capture2e(ENV.fetch("MEMPROF_CLI"), "diff", "--json", a, b)
        assert status.success?, out
        JSON.parse(out)
      end
      nothing = diff.call(dumps[0], dumps[1])
      assert_equal({ "count" => 0, "memsize" => 0 }, nothing["new"])
      assert_operator nothing["memprof_own"]["count"], :>, 0
      own = File.foreach(dumps[1]).select { |line| line.include?(%("memprof_own":true)) }
      assert own.any? { |line| line.include?(%("type":"FILE")) }, "the File the dump was written through"
      leak = diff.call(dumps[1], dumps[2])
      assert_equal 500, leak["new"]["count"]
      assert_equal [["Object", 500]], leak["by_location_and_class"].map { |row| [row["class"], row["count"]] }
    end
  end

  # What a dump makes is memprof's: stats after it listed the File's mutex, which a stale word
  # of the machine stack kept alive ("1 .../objspace.rb:87:Thread::Mutex" on Ruby 3.1).
  def test_stats_after_dump_all_list_nothing_the_dump_made
    Dir.mktmpdir("memprof-dump") do |dir|
      run_ruby(<<~RUBY) do |_out, err, path|
        # frozen_string_literal: true
        Memprof.start
        $kept = Array.new(3) { Object.new }
        Memprof.dump_all(#{File.join(dir, "heap.json").inspect})
        Memprof.stats
      RUBY
        assert_equal(["3 #{path}:3:Object", "1 #{path}:3:Array"], err.lines.map(&:strip))
      end
    end
  end

  # The user's own path may be a link, a FIFO or a device: the dump is written through the link
  # and into the FIFO, which stay what they were. Before, the finished file was renamed over
  # them (as root, `memprof dump -p PID -o /dev/null` replaced /dev/null with a file).
  def test_dump_all_writes_through_a_link_and_into_a_fifo_without_replacing_them
    Dir.mktmpdir("memprof-dump") do |dir|
      File.symlink("real.json", File.join(dir, "link.json"))  # its target does not exist yet
      File.mkfifo(File.join(dir, "fifo.json"))
      run_ruby(<<~RUBY) do |out|
        Memprof.start
        $kept = Array.new(10) { "kept" }
        Memprof.dump_all(#{File.join(dir, "link.json").inspect})
        reader = Thread.new { File.binread(#{File.join(dir, "fifo.json").inspect}) }
        Memprof.dump_all(#{File.join(dir, "fifo.json").inspect})
        puts reader.value.count("\n")
      RUBY
        assert_operator Integer(out), :>, 1000
      end
      assert File.symlink?(File.join(dir, "link.json"))
      kept = File.foreach(File.join(dir, "real.json")).count { |l| l.include?('"value":"kept"') && l.include?('"line":2,') }
      assert_equal 10, kept
      assert_equal "fifo", File.ftype(File.join(dir, "fifo.json"))
      assert_equal %w[fifo.json link.json real.json], Dir.children(dir).sort  # no scratch file left
    end
  end
  # Threads allocating while a dump is written (a busy server): GC stays on (it was off for the
  # whole dump, and the app's garbage piled up: 223 MB and 2.5M live slots for a 6 MB dump), and
  # every object the dump annotates is the one memprof recorded at that address: the kept
  # Strings and Hashes at their lines, no line given to an object of another type.
  def test_dump_all_keeps_gc_on_while_threads_allocate_and_annotates_only_true_sites
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY) do |out, _err, path|
        Memprof.start
        $strings = Array.new(3000) { |i| "kept \#{i}" }   # line 2
        $hashes = Array.new(2000) { |i| { i => i } }     # line 3
        busy = Array.new(2) { Thread.new { loop { Array.new(50) { "garbage" }; Thread.pass } } }  # line 4
        off = 0
        # (GC.enable answers whether GC was off, and turns it back on: a test may.)
        watch = Thread.new { loop { off += 1 if GC.enable; Thread.pass } }
        sleep 0.1
        Memprof.dump_all(#{dump.inspect})
        puts off
        [watch, *busy].each(&:kill)
      RUBY
        assert_equal "0\n", out, "times the watching thread found GC off during the dump"
        objects = File.foreach(dump).map { |l| JSON.parse(l) }.select { |o| o["file"] == path }
        by_line = objects.group_by { |o| o["line"] }
        assert_equal({ "STRING" => 3000, "ARRAY" => 1 },
                     by_line[2].reject { |o| o["type"] == "STRING" && !o["value"].start_with?("kept ") }
                               .map { |o| o["type"] }.tally)
        assert by_line[2].all? { |o| o["type"] == "ARRAY" || o["value"].match?(/\A(kept )?\d+\z/) }
        assert_equal({ "HASH" => 2000, "ARRAY" => 1 }, by_line[3].map { |o| o["type"] }.tally)
        assert by_line.fetch(4, []).all? { |o| %w[ARRAY STRING DATA OBJECT].include?(o["type"]) }
      end
    end
  end

  # Beside a thread busy on the CPU, Ruby 3.1-3.3's dump let it run at each 4 KB write: the dump
  # took 100 s instead of 1 on 3.3, and it was no one moment of the heap (172-927 references to
  # objects absent from it, what the thread made and dropped meanwhile). Memprof.dump_all now
  # writes it in a forked child, which must still show what that thread's frames hold as
  # reachable (its locals: 500 Held objects).
  def test_dump_all_beside_a_busy_thread_is_one_moment_of_the_heap_with_every_threads_objects
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY) do |out|
        class Held; end
        Memprof.start
        $pages = Array.new(20_000) { |i| "page filler \#{i}" } # a dump of ~10 MB: many writes
        ready = Queue.new
        stop = false
        busy = Thread.new do
          held = Array.new(500) { Held.new }
          ready << true
          churn = []
          until stop
            churn << [churn.size]
            churn = [] if churn.size > 1000
          end
          held.size
        end
        ready.pop
        Memprof.dump_all(#{dump.inspect})
        stop = true
        puts busy.value
      RUBY
        assert_equal "500\n", out
      end
      analysis = lambda do |*filter|
        text, warnings, status = Open3.capture3(ENV.fetch("MEMPROF_CLI"), "analyze", "--json", *filter, dump)
        assert status.success?, warnings
        JSON.parse(text)
      end
      assert_equal 0, analysis.call["problems"]["dangling_references"], "references to objects absent from the dump"
      held = analysis.call("--class", "Held")
      assert_equal [500, 500], [held["total"]["count"], held["reachable"]["count"]]
    end
  end

  # The child's failures are the caller's: what its dump raised is raised by Memprof.dump_all
  # (class and message), a child that dies says how, neither leaves a file behind, and the
  # next dump is written.
  def test_the_dump_childs_failures_are_raised_by_dump_all
    Dir.mktmpdir("memprof-dump") do |dir|
      run_ruby(<<~RUBY) do |out|
        Thread.new { sleep }
        real = ObjectSpace.method(:dump_all)
        def ObjectSpace.dump_all(**) = raise(Errno::ENOSPC, "writing the dump")
        begin
          Memprof.dump_all(#{File.join(dir, "full.json").inspect})
        rescue SystemCallError => e
          puts "\#{e.class}: \#{e.message}"
        end
        def ObjectSpace.dump_all(**) = Process.kill(:KILL, Process.pid)
        begin
          Memprof.dump_all(#{File.join(dir, "killed.json").inspect})
        rescue Memprof::Error => e
          puts e.message.sub(/process [0-9]+/, "process N")
        end
        ObjectSpace.define_singleton_method(:dump_all, real)
        puts Memprof.dump_all(#{File.join(dir, "fine.json").inspect})
      RUBY
        assert_equal ["Errno::ENOSPC: No space left on device - writing the dump",
                      "Memprof.dump_all: the dump's child process N ended by signal 9 (Killed) before it answered",
                      File.join(dir, "fine.json")], out.lines.map(&:chomp)
      end
      assert_equal ["fine.json"], Dir.children(dir)
    end
  end

  # A child that hangs (here the app's dump_all waits on a pipe; in life a lock another thread
  # held at the fork, a C extension's fork handler) held the calling thread until something
  # interrupted it: a trap handler's or a request's dump_all never returned. A child asleep with
  # no CPU time and no I/O for stall_timeout seconds is now killed, its files removed, and the
  # error says where it slept. (Before: the script's own Timeout printed "hung".)
  def test_a_hung_dump_child_is_killed_after_the_stall_timeout
    Dir.mktmpdir("memprof-dump") do |dir|
      run_ruby(<<~RUBY) do |out|
        require "timeout"
        Thread.new { sleep }
        [0, -1, "30", Float::INFINITY].each do |bad|
          Memprof.dump_all(#{File.join(dir, "bad.json").inspect}, stall_timeout: bad)
        rescue ArgumentError => e
          puts e.message
        end
        real = ObjectSpace.method(:dump_all)
        never_written, = IO.pipe
        ObjectSpace.define_singleton_method(:dump_all) { |**| never_written.read(1) }
        begin
          Timeout.timeout(20) { Memprof.dump_all(#{File.join(dir, "hung.json").inspect}, stall_timeout: 1) }
          puts "written"
        rescue Memprof::Error => e
          puts e.message
          child = Integer(e.message[/process ([0-9]+)/, 1])
          puts File.exist?("/proc/\#{child}") ? "child \#{child} is still there" : "child gone"
        rescue Timeout::Error
          puts "hung"
        end
        ObjectSpace.define_singleton_method(:dump_all, real)
        puts Memprof.dump_all(#{File.join(dir, "fine.json").inspect}, stall_timeout: 1)
      RUBY
        lines = out.lines.map(&:chomp)
        assert_equal ["0", "-1", '"30"', "Infinity"].map { |bad|
                       "Memprof.dump_all: stall_timeout must be a positive number of seconds or nil, not #{bad}"
                     }, lines.shift(4)
        assert_match(/\AMemprof\.dump_all: the dump's child process \d+ made no progress for 1 s \(asleep( in \w+)?, no CPU time and no I\/O\) and was killed\z/,
                     lines.shift)
        assert_equal ["child gone", File.join(dir, "fine.json")], lines
      end
      assert_equal ["fine.json"], Dir.children(dir)
    end
  end

  # A dump into a FIFO waits for its reader as a dump written in this process would: the child
  # asleep in its write (or its open) is not a hung child, however long the reader takes.
  def test_a_dump_child_writing_into_a_fifo_waits_for_a_late_reader
    Dir.mktmpdir("memprof-dump") do |dir|
      fifo = File.join(dir, "heap.fifo")
      File.mkfifo(fifo)
      copy = File.join(dir, "copy.json")
      reader = Thread.new do
        sleep 2.5
        File.binwrite(copy, File.binread(fifo))
      end
      run_ruby(<<~RUBY) do |out|
        Thread.new { sleep }
        $kept = Array.new(1000) { |i| "kept \#{i}" }
        puts Memprof.dump_all(#{fifo.inspect}, stall_timeout: 1)
      RUBY
        assert_equal "#{fifo}\n", out
      end
      reader.join
      kept = File.foreach(copy).grep(/"value":"kept \d+"/).size
      assert_equal 1000, kept
      assert_equal ["copy.json", "heap.fifo"], Dir.children(dir).sort
    end
  end

  # A child writing into a FIFO writes the dump in full to a private file in $TMPDIR, then copies
  # it into the FIFO. Killed meanwhile (here Timeout ends the wait while the reader reads
  # nothing), it left that file behind, as big as the dump: the parent knew only the names of
  # the scratch files beside the FIFO. It now knows the child's pid, and so its private files.
  def test_a_killed_dump_child_writing_into_a_fifo_leaves_nothing_in_tmpdir
    Dir.mktmpdir("memprof-dump") do |dir|
      fifo = File.join(dir, "heap.fifo")
      File.mkfifo(fifo)
      tmp = File.join(dir, "tmp")
      Dir.mkdir(tmp)
      reading = File.join(dir, "reading")
      reader = Thread.new do
        File.open(fifo) do |pipe| # opens the FIFO, then reads nothing until the test is over
          File.write(reading, "")
          sleep 0.1 until File.exist?(File.join(dir, "done"))
          pipe.read
        end
      end
      run_ruby(<<~RUBY, env: { "TMPDIR" => tmp }) do |out|
        require "timeout"
        Thread.new { sleep }
        $kept = Array.new(20_000) { |i| "kept \#{i}" } # a dump much bigger than a pipe holds
        begin
          Timeout.timeout(3) { Memprof.dump_all(#{fifo.inspect}) }
          puts "written"
        rescue Timeout::Error
          puts "timed out"
        end
        puts Dir.children(#{tmp.inspect}).inspect
      RUBY
        assert_equal "timed out\n[]\n", out
      end
      assert File.exist?(reading), "the reader never opened the FIFO"
      File.write(File.join(dir, "done"), "")
      reader.join
    end
  end

  # Timeout around a dump written by a child ends the child and leaves nothing: before, Ruby's
  # own interrupt check at the end of the wait raised past memprof's (the child ran on and wrote
  # the file after the timeout), and Timeout's throw passed the rescue that removed the scratch
  # file (an empty .partial stayed).
  def test_a_timeout_around_dump_all_ends_its_child_and_leaves_no_file
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY) do |out|
        require "timeout"
        Thread.new { loop {} }
        $kept = Array.new(300_000) { |i| "kept \#{i}" }  # a dump of ~40 MB: longer than 20 ms
        begin
          Timeout.timeout(0.02) { Memprof.dump_all(#{dump.inspect}) }
          puts "written"
        rescue Timeout::Error
          puts "timed out"
        end
        sleep 1  # what a child still running would have had to finish
      RUBY
        assert_equal "timed out\n", out
      end
      assert_equal [], Dir.children(dir)
    end
  end

  # A child forked to write the dump keeps the table, even when the app asked forked children
  # to start empty (fork: :reset, for preforking servers): its dump is the parent's heap.
  def test_a_dump_written_in_a_child_is_annotated_under_fork_reset
    Dir.mktmpdir("memprof-dump") do |dir|
      dump = File.join(dir, "heap.json")
      run_ruby(<<~RUBY)
        Memprof.start(fork: :reset)
        $kept = Array.new(10) { "kept" }
        Thread.new { sleep }
        Memprof.dump_all(#{dump.inspect})
      RUBY
      assert_equal 10, File.foreach(dump).count { |l| l.include?('"value":"kept"') && l.include?('"line":2,') }
    end
  end

  # The usual way to dump a running app: a signal handler. Trap context cannot `require`, and
  # dump, dump_all to a path and to an IO all needed one; what memprof loads is loaded with it,
  # so none of its objects is charged to the app either.
  def test_dump_and_dump_all_work_in_a_signal_handler_and_charge_nothing_to_the_app
    Dir.mktmpdir("memprof-dump") do |dir|
      run_ruby(<<~RUBY) do |out|
        require "stringio"
        Memprof.start
        kept = "kept"
        done = Queue.new
        trap("USR2") do
          Memprof.dump_all(#{File.join(dir, "a.json").inspect})
          Memprof.dump_all(io = StringIO.new)
          Memprof.dump(kept, StringIO.new)
          done << io.string.lines.size
        rescue Exception => e
          done << e
        end
        Process.kill("USR2", Process.pid)
        result = done.pop
        puts result.is_a?(Integer) && result > 1000 ? "dumped" : result.inspect
        GC.start
        Memprof.stats(stats = StringIO.new)
        puts stats.string.lines.reject { |l| l.include?(__FILE__) }
      RUBY
        assert_equal "dumped\n", out
      end
      assert_operator File.foreach(File.join(dir, "a.json")).count, :>, 1000
    end
  end
end
