# frozen_string_literal: true

# `make demo` (examples/demo.sh: attach to the shop server) and its in-process version
# (examples/profile_shop.rb: Memprof.report) must show the leak of the bundled example
# (examples/shop): the line that subscribes a PriceWatcher per request and never unsubscribes it.
require "minitest/autorun"
require "open3"
require "rbconfig"

class DemoTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  APP = File.join(ROOT, "examples", "shop", "app.rb")

  def leak_line
    File.foreach(APP).find_index { |line| line.include?("EVENTS.subscribe(") } + 1
  end

  def profile_shop(*args)
    Open3.capture3(RbConfig.ruby, "-I", File.join(ROOT, "lib"),
                   File.join(ROOT, "examples", "profile_shop.rb"), *args)
  end

  def test_attach_demo_finds_the_leak_in_the_running_server_and_it_keeps_serving
    memprof = ENV.fetch("MEMPROF", File.join(ROOT, "build", "memprof"))
    out, err, status = Open3.capture3({ "MEMPROF" => memprof }, File.join(ROOT, "examples", "demo.sh"))
    assert status.success?, "demo.sh failed: #{err}\n#{out}"
    leaks = out[/sites? grew in all 6 rounds.*?\n\n/m]
    refute_nil leaks, out
    # Both objects of a quote's leak, and nothing else, grow in every round.
    suspects = leaks.lines.grep(/app\.rb:/).map { |line| line.split.last(2).join(" ") }
    assert_equal ["examples/shop/app.rb:#{leak_line} Shop::PriceWatcher",
                  "examples/shop/app.rb:#{leak_line} String"],
                 suspects.map { |s| s.sub(%r{\A.*/examples/}, "examples/") }.sort
    assert_match(/wrote .*shop\.json .* paused [\d.]+ ms for the fork/, out)
    assert_match(/detached from process \d+/, out)
    # The request after detach is answered.
    assert_match(/"total":"11\.75"/, out)
  end

  def test_demo_names_the_leaking_line_with_exact_counts
    out, err, status = profile_shop("300")
    assert status.success?, "profile_shop.rb failed: #{err}"
    # Per request: one PriceWatcher and the String of its cart id, both made on that line.
    assert_equal "Leak: examples/shop/app.rb:#{leak_line} keeps 600 objects alive " \
                 "(300 Shop::PriceWatcher, 300 String) after 300 requests: 2.0 per request.",
                 out.lines.last.chomp
  end

  def test_demo_rejects_a_bad_request_count
    _, err, status = profile_shop("many")
    refute status.success?
    assert_equal "usage: profile_shop.rb [REQUESTS]  (a positive number)\n", err
  end
end
