# frozen_string_literal: true

# memprof's report against memory_profiler's (Debian's ruby-memory-profiler) on the same
# programs, each profiled in its own fresh process by profile.rb:
# - known_sites (fixtures/known_sites.rb): every site's allocated and retained count and class
#   is known in advance; both tools must report exactly EXPECTED;
# - shop (examples/shop): a Rack app with JSON, URI and query parsing from Ruby's library and
#   gems, and a leak; retained objects must agree at every file:line of every file, allocated
#   objects at every line of the app's own files.
#
# What the tools count differently, and how the comparison handles it:
# - memory_profiler sees only what ObjectSpace.each_object yields: objects with a class.
#   Ruby's internal objects (T_IMEMO, T_NODE, hidden strings and arrays whose class pointer is
#   0) are invisible to it, so memprof rows whose class is not a Ruby class name are left out of
#   the comparison (INTERNAL_CLASS).
# - memory_profiler groups by location or by class, never by both: the tools are compared per
#   location, with memprof's classes summed; classes are checked against EXPECTED.
# - memory_profiler disables GC inside the block, memprof does not: the counts of allocated
#   objects must not depend on it, and the comparison proves that they do not.
require "json"
require "minitest/autorun"
require "open3"
require "rbconfig"
require_relative "fixtures/known_sites"

class ParityTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  SHOP_DIR = File.join(ROOT, "examples", "shop")
  # memprof names internal objects with a parenthesised kind, e.g. "(imemo)"; a Ruby class name
  # never starts with "(".
  INTERNAL_CLASS = /\A\(/

  @results = {}
  class << self
    # One profile per tool and program, shared by the tests that read it.
    def profile(tool, program)
      @results[[tool, program]] ||= begin
        script = File.join(__dir__, "profile.rb")
        load_path = [ENV["MEMPROF_EXT_DIR"], File.join(ROOT, "lib")].compact.flat_map { |dir| ["-I", dir] }
        out, err, status = Open3.capture3(RbConfig.ruby, *load_path, script, tool, program)
        raise "profile.rb #{tool} #{program} failed: #{err}" unless status.success?

        JSON.parse(out)
      end
    end
  end

  def memprof_by_class(program, kind)
    self.class.profile("memprof", program).fetch(kind).transform_values do |classes|
      classes.reject { |name, _| name.match?(INTERNAL_CLASS) }
    end.reject { |_, classes| classes.empty? }
  end

  def memprof_by_location(program, kind)
    memprof_by_class(program, kind).transform_values { |classes| classes.values.sum }
  end

  def memory_profiler_by_location(program, kind)
    self.class.profile("memory_profiler", program).fetch(kind)
  end

  def expected_by_class(kind)
    KnownSites.site_lines.to_h { |location, site| [location, KnownSites::EXPECTED.fetch(site).fetch(kind)] }
                         .reject { |_, classes| classes.empty? }
  end

  def expected_by_location(kind)
    expected_by_class(kind).transform_values { |classes| classes.values.sum }
  end

  def test_known_sites_have_every_expected_site
    assert_equal KnownSites::EXPECTED.keys.sort, KnownSites.site_lines.values.sort
  end

  def test_memory_profiler_reports_exactly_the_known_allocations
    assert_equal expected_by_location("allocated"), memory_profiler_by_location("known_sites", "allocated")
  end

  def test_memory_profiler_reports_exactly_the_known_retained_objects
    assert_equal expected_by_location("retained"), memory_profiler_by_location("known_sites", "retained")
  end

  def test_memprof_reports_exactly_the_known_allocations_by_class
    assert_equal expected_by_class("allocated"), memprof_by_class("known_sites", "allocated")
  end

  def test_memprof_reports_exactly_the_known_retained_objects_by_class
    assert_equal expected_by_class("retained"), memprof_by_class("known_sites", "retained")
  end

  def test_known_sites_retained_by_location_agree
    assert_equal memory_profiler_by_location("known_sites", "retained"),
                 memprof_by_location("known_sites", "retained")
  end

  def test_known_sites_allocated_by_location_agree
    assert_equal memory_profiler_by_location("known_sites", "allocated"),
                 memprof_by_location("known_sites", "allocated")
  end

  # memory_profiler runs its final GC.start from Ruby code, where words that the block's calls
  # left on the machine stack can keep a few of its last objects alive (Ruby 3.3 and 3.4: 3
  # objects at app.rb:29 and one in each of json, uri and rack); memprof's final GC runs over a
  # zeroed stack. So memprof may report fewer at a location, never more, and exactly the leak.
  def test_shop_retained_by_location_agree_everywhere
    expected = memory_profiler_by_location("shop", "retained")
    actual = memprof_by_location("shop", "retained")
    leak = "#{SHOP_DIR}/app.rb:28"
    assert_equal 600, expected[leak]
    assert_equal 600, actual[leak]
    actual.each do |location, count|
      assert_operator count, :<=, expected.fetch(location, 0), "memprof retains more at #{location}"
    end
    stack_kept = expected.sum { |location, count| count - actual.fetch(location, 0) }
    assert_operator stack_kept, :<=, 10, "memory_profiler's extra retained objects: #{expected.to_a - actual.to_a}"
  end

  def test_shop_allocated_by_location_agree_in_the_app
    in_app = ->(counts) { counts.select { |location, _| location.start_with?("#{SHOP_DIR}/") } }
    expected = in_app.call(memory_profiler_by_location("shop", "allocated"))
    refute_empty expected
    assert_equal expected, in_app.call(memprof_by_location("shop", "allocated"))
  end

  def test_both_tools_keep_the_programs_result
    assert_equal KnownSites::EXPECTED.values.sum { |e| e["retained"].values.sum } - 1,
                 self.class.profile("memprof", "known_sites").fetch("kept")
    assert_equal self.class.profile("memory_profiler", "known_sites").fetch("kept"),
                 self.class.profile("memprof", "known_sites").fetch("kept")
  end
end
