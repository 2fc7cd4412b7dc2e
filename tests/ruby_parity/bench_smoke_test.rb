# frozen_string_literal: true

# The benchmark (bench/ruby) must not rot between the runs that fill the README table: every
# workload runs under every profiler at a small scale, and each child's own check (the profiler
# attributed exactly the kept objects to the line that allocates them) must pass. Times are
# not asserted: they belong to the benchmark, not to the tests.
require "json"
require "minitest/autorun"
require "open3"
require "rbconfig"

ROOT = File.expand_path("../..", __dir__)
BENCH = File.join(ROOT, "bench", "ruby")
require File.join(BENCH, "profilers")

class BenchSmokeTest < Minitest::Test
  SCALE = { "alloc" => 0.01, "rails" => 0.01 }.freeze

  def run_child(workload, profiler)
    out, err, status = Open3.capture3(RbConfig.ruby, "-I", File.join(ROOT, "lib"),
                                      File.join(BENCH, "child.rb"), workload, profiler,
                                      SCALE.fetch(workload).to_s)
    assert status.success?, "child.rb #{workload} #{profiler} failed: #{err}"
    JSON.parse(out)
  end

  SCALE.each_key do |workload|
    Profilers::ALL.each do |profiler|
      define_method("test_#{workload}_under_#{profiler.name}") do
        result = run_child(workload, profiler.name)
        assert_equal [workload, profiler.name], result.values_at("workload", "profiler")
        assert_operator result.fetch("seconds"), :>, 0
      end
    end
  end

  # Counted per type with GC off (ObjectSpace.count_objects counts live slots): GC.stat's
  # total_allocated_objects would also count the VM's internal objects (call caches refilled
  # after a method-cache miss are imemo objects), which no profiler of Ruby objects reports.
  # count_objects fills hashes made beforehand, and has run once: its first call interns the
  # type names, 26 Strings. In a child of its own: this process has the threads that the other
  # tests' Open3 calls left, and count_objects counts what any thread allocates.
  COUNT_ALLOCATIONS = <<~RUBY
    require "json"
    require #{File.join(BENCH, "workloads", "alloc_loop").dump}
    AllocLoop.prepare(0.01)
    AllocLoop.run # first run: Ruby's lazily built tables
    before = {}
    after = {}
    ObjectSpace.count_objects(before)
    GC.disable
    ObjectSpace.count_objects(before)
    kept = AllocLoop.run
    ObjectSpace.count_objects(after)
    GC.enable
    allocated = %i[T_STRING T_ARRAY T_HASH].to_h { |type| [type, after[type] - before[type]] }
    puts JSON.generate("allocated" => allocated, "announced" => AllocLoop.objects_allocated,
                       "kept" => kept.size, "kept_count" => AllocLoop.kept_count)
  RUBY

  def test_alloc_loop_allocates_the_objects_it_announces
    out, err, status = Open3.capture3(RbConfig.ruby, "-e", COUNT_ALLOCATIONS)
    assert status.success?, err
    result = JSON.parse(out)
    allocated = result.fetch("allocated")
    # Per iteration 3 Strings, 1 Array, 1 Hash; + 1 Array: the one holding the kept hashes.
    assert_equal({ "T_STRING" => 75_000, "T_ARRAY" => 25_001, "T_HASH" => 25_000 }, allocated)
    assert_equal result.fetch("announced") + 1, allocated.values.sum
    assert_equal 25, result.fetch("kept")
    assert_equal result.fetch("kept_count"), result.fetch("kept")
  end

  def test_bad_arguments_are_one_line_and_non_zero
    _, err, status = Open3.capture3(RbConfig.ruby, File.join(BENCH, "run.rb"), "--workloads", "nope")
    refute status.success?
    assert_equal "run.rb: invalid argument: unknown workload nope\n", err
  end
end
