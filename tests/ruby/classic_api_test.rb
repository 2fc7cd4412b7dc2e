# frozen_string_literal: true

require_relative "test_helper"

# The API as users of the 2009 memprof wrote it: a file name wherever output goes.
class ClassicApiTest < Minitest::Test
  include MemprofTestHelper

  def test_stats_stats_bang_and_track_write_to_a_file_name
    Dir.mktmpdir("memprof-classic") do |dir|
      run_ruby(<<~RUBY) do |out, err, path|
        require "pathname"
        stats, bang, after, track, missing = #{%w[stats stats_bang after track no/such].map { |n| File.join(dir, n) }.inspect}
        bang = Pathname(bang)
        $kept = []
        Memprof.start
        3.times { $kept << Object.new }                                  # line 6
        GC.start
        Memprof.stats(stats)
        Memprof.stats!(bang)
        2.times { $kept << [] }                                          # line 10
        GC.start
        Memprof.stats(after)
        Memprof.stop
        Memprof.track(track) { $kept << Object.new }                     # line 14
        begin
          Memprof.track(missing) { puts "the block ran, its results lost" }
        rescue SystemCallError => e
          puts "\#{e.class}: \#{e.message}"
        end
      RUBY
        # Refused before the block runs, in track's name.
        assert_equal "Errno::ENOENT: No such file or directory - Memprof.track: cannot write #{File.join(dir, "no", "such")}\n", out
        assert_equal "", err
        read = ->(name) { stats_for(File.read(File.join(dir, name)), path) }
        assert_equal({ "L6:Object" => 3 }, read.("stats"))
        assert_equal({ "L6:Object" => 3 }, read.("stats_bang"))
        assert_equal({ "L10:Array" => 2 }, read.("after"))   # stats! forgot line 6
        assert_equal({ "L14:Object" => 1 }, read.("track"))
      end
    end
  end

  def test_output_that_is_neither_an_io_nor_a_path_is_a_type_error
    run_ruby(<<~'RUBY') { |out| assert_equal "TypeError: Memprof.stats: expected an IO or a path (String or Pathname), got Integer\n", out }
      Memprof.start
      begin
        Memprof.stats(3)
      rescue TypeError => e
        puts "#{e.class}: #{e.message}"
      end
    RUBY
  end
end
