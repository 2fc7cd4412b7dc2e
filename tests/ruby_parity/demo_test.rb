# frozen_string_literal: true

# `make demo` must show the leak of the bundled example (examples/shop): the line that
# subscribes a PriceWatcher per request and never unsubscribes it.
require "minitest/autorun"
require "open3"

class DemoTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  APP = File.join(ROOT, "examples", "shop", "app.rb")

  def leak_line
    File.foreach(APP).find_index { |line| line.include?("EVENTS.subscribe(") } + 1
  end

  def test_demo_names_the_leaking_line_with_exact_counts
    out, err, status = Open3.capture3(File.join(ROOT, "examples", "demo.sh"), "300")
    assert status.success?, "demo.sh failed: #{err}"
    # Per request: one PriceWatcher and the String of its cart id, both made on that line.
    assert_equal "Leak: examples/shop/app.rb:#{leak_line} keeps 600 objects alive " \
                 "(300 Shop::PriceWatcher, 300 String) after 300 requests: 2.0 per request.",
                 out.lines.last.chomp
  end

  def test_demo_rejects_a_bad_request_count
    _, err, status = Open3.capture3(File.join(ROOT, "examples", "demo.sh"), "many")
    refute status.success?
    assert_equal "usage: profile_shop.rb [REQUESTS]  (a positive number)\n", err
  end
end
