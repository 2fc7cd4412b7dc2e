# frozen_string_literal: true

require_relative "test_helper"

# Code that is compiled and dropped (eval loops, ERB#result, class_eval strings, reloading)
# frees its instruction sequences, and new code can get the same memory back: an object must
# be charged to the file and line of the code that made it, never to earlier code that ran at
# the same address.
class DroppedCodeTest < Minitest::Test
  include MemprofTestHelper

  # A slowly growing heap with frequent major GCs makes the race likely: code born during
  # incremental marking and dead before it ends is freed by that same GC's sweep.
  FREQUENT_MAJOR_GC = { "RUBY_GC_HEAP_GROWTH_FACTOR" => "1.05",
                        "RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR" => "1.0" }.freeze

  def test_each_evaluated_file_gets_exactly_its_own_objects
    run_ruby(<<~'RUBY', env: FREQUENT_MAJOR_GC) do |out|
      Memprof.start
      $k = []
      100_000.times { |i| eval("$k << [#{i}]", nil, "gen_#{i}.rb") }
      GC.start
      Memprof.stats($stdout)
    RUBY
      counts = out.lines.grep(/ gen_\d+\.rb:1:Array$/).to_h { |l| [l[/gen_\d+/], Integer(l[/\d+/])] }
      wrong = counts.reject { |_, n| n == 1 }
      assert_equal 100_000, counts.size, "files missing: #{(0...100_000).map { |i| "gen_#{i}" } - counts.keys}"
      assert_empty wrong
    end
  end

  def test_erb_results_and_class_eval_strings
    run_ruby(<<~'RUBY') do |out|
      require "erb"
      Memprof.start
      $k = []
      3_000.times do |i|
        erb = ERB.new("<% $k << [#{i}] %>")
        erb.filename = "tpl_#{i}.erb"
        erb.result(binding)
        Object.class_eval("$k << { n: #{i} }", "ce_#{i}.rb", 1)
      end
      GC.start
      Memprof.stats($stdout)
    RUBY
      templates = out.lines.grep(/ tpl_\d+\.erb:1:Array$/)
      evals = out.lines.grep(/ ce_\d+\.rb:1:Hash$/)
      assert_equal 3_000, templates.size
      assert_equal 3_000, evals.size
      assert_equal ["      1"], (templates + evals).map { |l| l[0, 7] }.uniq
    end
  end
end
