# frozen_string_literal: true

require_relative "test_helper"

# Memprof.report's numbers and formats; Memprof.dump and Memprof.dump_all output (JSON lines
# that Debian's heapy reads).
class ReportAndDumpTest < Minitest::Test
  include MemprofTestHelper

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
end
