# frozen_string_literal: true

# A known workload run after attach is counted exactly (issue 10, item 7): the target waits on
# its stdin (a pipe) for a command, then keeps exactly 10,000 Strings made at one line.
require "json"
require_relative "attach_helper"

class AttachExactCountsTest < Minitest::Test
  include AttachTestHelper

  def test_ten_thousand_strings_at_a_known_line
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    site = "#{target.script}:#{marked_line(target.script, 'kept')}:String"
    refute live_stats(target.pid).key?(site), "counted before the workload ran"

    target.send_line("alloc")
    target.wait_for(/\Aallocated 10000\z/)
    assert_equal 10_000, live_stats(target.pid)[site]

    # Still exact after a full GC (they are kept) and after GC.compact moved them.
    target.send_line("gc")
    target.wait_for(/\Acollected\z/)
    assert_equal 10_000, live_stats(target.pid)[site]
    if GC.respond_to?(:compact)
      target.send_line("compact")
      target.wait_for(/\Acompacted\z/)
      assert_equal 10_000, live_stats(target.pid)[site]
    end

    # --top keeps the largest groups, and ours is the largest.
    top = memprof!("stats", "-p", target.pid, "--top", 1).lines
    assert_equal ["10000 #{site}"], top.map(&:strip)
    # --json gives the group's fields (before: the same line, as a string to split again).
    json = JSON.parse(memprof!("stats", "-p", target.pid, "--top", 1, "--json"))
    group = json["groups"].first
    assert_equal [target.pid, 1, 10_000, target.script, marked_line(target.script, "kept"), "String"],
                 [json["pid"], json["groups"].size, group["count"], group["file"], group["line"], group["class"]]
    assert_operator group["bytes"], :>=, 10_000 * 40, "a String's slot is 40 bytes at least"

    detach!(target)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  # `top` shows the app's allocations per second, not the objects memprof's own thread makes to
  # answer it: an app waiting on its stdin allocates nothing. Before: ~130 objects a reading
  # ([273.9, 264.4, 264.9] per second at this interval; more with more rows).
  def test_top_counts_none_of_its_own_allocations
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    target.send_line("alloc") # rows to read
    target.wait_for(/\Aallocated 10000\z/)
    rates = Array.new(3) do
      JSON.parse(memprof!("top", "-p", target.pid, "--json", "--interval", "0.5s", target: target))
          .fetch("allocations_per_second")
    end
    assert_equal [0.0, 0.0, 0.0], rates
    # --json has the screen's header too: GC rate, and what is live in all (the rows' sum).
    reading = JSON.parse(memprof!("top", "-p", target.pid, "--json", "--interval", "0.2s", target: target))
    assert_operator reading.fetch("gc_per_second"), :>=, 0.0
    assert_operator reading.fetch("live"), :>=, 10_001
    assert_equal reading["rows"].sum { |row| row["live"] }, reading["live"]
    assert_equal reading["rows"].sum { |row| row["bytes"] }, reading.fetch("live_bytes")
    # --rows N: N rows under the headers (there are more groups: the Strings, their Array).
    screen = memprof!("top", "-p", target.pid, "--once", "--rows", 1, "--interval", "0.2s", target: target)
    assert_equal 1, screen.lines.drop_while { |l| !l.include?("LIVE") }.drop(1).size, screen
    detach!(target)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  # Two `memprof dump -p` files carry each tracked object's allocation generation, so `diff`
  # finds every new object, also those in the very slots the old ones left, made at the same
  # line: by address, class and site alone, those looked old.
  def test_diff_of_two_dumps_counts_new_objects_in_reused_slots
    target = ruby_job_target(<<~RUBY)
      def make = Array.new(5000) { Object.new } # MARK: made
      $stdin.each_line do |line|
        $objects = nil if line == "again\n"
        GC.start
        $objects = make
        GC.start
        puts "made"
      end
    RUBY
    attach!(target)
    dumps = %w[a b].map { |name| File.join(@tmpdir, "#{name}.json") }
    %w[first again].zip(dumps).each do |command, dump|
      seen = target.lines.size
      target.send_line(command)
      target.wait_for(/\Amade\z/, from: seen)
      memprof!("dump", "-p", target.pid, "-o", dump, target: target)
    end
    site = "#{File.basename(target.script)}:#{marked_line(target.script, 'made')}"
    made = dumps.map do |dump|
      File.foreach(dump).filter_map do |line|
        next unless line.include?('"type":"OBJECT"')

        object = JSON.parse(line)
        object["address"] if "#{File.basename(object['file'].to_s)}:#{object['line']}" == site
      end
    end
    assert_equal [5000, 5000], made.map(&:size)
    reused = (made[0] & made[1]).size
    assert_operator reused, :>=, 1000, "the new objects should take slots the old ones left"

    diff = JSON.parse(memprof!("diff", dumps[0], dumps[1], "--json", "--top", 0, target: target))
    assert diff.fetch("generations"), "memprof's dumps carry allocation generations"
    rows = diff.fetch("by_location_and_class").select { |row| row["location"].end_with?(site) }
    assert_equal({ "Object" => 5000, "Array" => 1 },
                 rows.to_h { |row| [row.fetch("class"), row.fetch("count")] },
                 "#{reused} of the new objects sit where old ones were")
    detach!(target)
  end

  # Two dumps of an app that does nothing in between differ by nothing: what the agent and
  # Memprof.dump_all make to write the second (the request, the handler its forked child
  # evaluates, the dump's File and paths) is marked memprof_own and left out. Before: 9 objects
  # of memprof's (the handler's instruction sequence and syntax tree, the request's Strings, ...).
  def test_two_dumps_of_an_idle_app_differ_by_nothing
    target = ruby_job_target("$stdin.each_line { |line| puts line }\n")
    attach!(target)
    dumps = %w[a b c].map { |name| File.join(@tmpdir, "#{name}.json") }
    dumps.each { |dump| memprof!("dump", "-p", target.pid, "-o", dump, target: target) }
    dumps.each_cons(2) do |a, b|
      diff = JSON.parse(memprof!("diff", a, b, "--json", target: target))
      assert_equal({ "count" => 0, "memsize" => 0 }, diff.fetch("new"), diff.fetch("by_location_and_class").inspect)
      assert_operator diff.fetch("memprof_own").fetch("count"), :>, 0
    end
    detach!(target)
  end

  # The dump's forked child forgets the app's other threads (as Process.fork's does), and with
  # them their frames: what a background thread kept in a local (500 Held objects here) showed
  # as garbage, with no path from a root. The child now records the roots and the threads'
  # references first, and the dump shows those.
  def test_a_dump_shows_what_other_threads_hold_as_reachable
    target = ruby_job_target(<<~RUBY)
      class Held; end
      ready = Queue.new
      Thread.new { held = Array.new(500) { Held.new }; ready << true; sleep; held }
      ready.pop
      $stdin.each_line { |line| puts line }
    RUBY
    attach!(target)
    dump = File.join(@tmpdir, "heap.json")
    memprof!("dump", "-p", target.pid, "-o", dump, target: target)
    held = JSON.parse(memprof!("analyze", "--json", "--class", "Held", dump, target: target))
    assert_equal [500, 500], [held["total"]["count"], held["reachable"]["count"]]
    detach!(target)
  end

  # `leaks` names the site that keeps its objects and not the one whose garbage no GC has swept
  # yet: with a heap this large the target never collects on its own during the rounds, so
  # without a GC before each reading the garbage grows in every round too.
  def test_leaks_names_the_leak_and_not_the_uncollected_garbage
    # Ruby 3.1-3.2 read the first, 3.3 and later the second (slots of 40 bytes: Strings, Arrays).
    big_heap = { "RUBY_GC_HEAP_INIT_SLOTS" => "2000000", "RUBY_GC_HEAP_0_INIT_SLOTS" => "2000000" }
    target = spawn_target("target.rb", "commands", env: big_heap)
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    target.send_line("drip")
    target.wait_for(/\Adripping\z/)
    out = memprof!("leaks", "-p", target.pid, "--interval", "0.5s", "--rounds", 3, "--json", target: target)
    target.send_line("stop")
    target.wait_for(/\Adripped \d+\z/)
    suspects = JSON.parse(out).fetch("suspects").map { |suspect| suspect.fetch("key") }
    assert_equal ["#{File.basename(target.script)}:#{marked_line(target.script, 'leak')} Array"],
                 suspects.map { |key| key.sub(%r{\A.*/}, "") }
    # One round is "the 1 round", not "all 1 rounds".
    run_job(target, "drip", /\Adripping\z/)
    out = memprof!("leaks", "-p", target.pid, "--interval", "0.5s", "--rounds", 1, target: target)
    run_job(target, "stop", /\Adripped \d+\z/)
    # (One round cannot tell the leak from a site that fluctuated up once: 1 or more sites.)
    assert_match(/^\d+ sites? grew in the 1 round of 500 ms \(live objects allocated since attach\):$/, out)
    assert_match(/^note: a site whose count only fluctuates grows in the 1 round 1 time in 2;$/, out)
    detach!(target)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end
end
