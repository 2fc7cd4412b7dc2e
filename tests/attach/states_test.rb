# frozen_string_literal: true

# Attaching to a Ruby whatever its main thread is doing (issue 10, item 7 a-e): allocating in a
# loop, sleeping forever, blocked in read(2) on a pipe, joining 8 allocating threads, looping on
# GC.compact. Each time: attach succeeds, stats answers, detach, and the process is still alive
# and later computes the right result.
require_relative "attach_helper"

class AttachStatesTest < Minitest::Test
  include AttachTestHelper

  def attach_stats_detach(mode, site_mark: nil)
    target = spawn_target("target.rb", mode)
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    stats = live_stats(target.pid)
    if site_mark
      # Allocations after attach show up at the loop's line (the first stats may come before
      # the loop went round once: ask again until they do, bounded by PATIENCE).
      site = "#{target.script}:#{marked_line(target.script, site_mark)}:String"
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
      until stats.key?(site) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        sleep 0.05
        stats = live_stats(target.pid)
      end
      assert_operator stats.fetch(site, 0), :>, 0, "no #{site} in #{stats.inspect}"
    end
    detach!(target)
    assert_alive(target)
    # Detached: the agent answers no more.
    _, err, status = memprof("stats", "-p", target.pid)
    assert_equal 1, status.exitstatus
    assert_match(/no memprof agent|attach/, err)
    target
  end

  def finish(target, signal: true)
    count = target.lines.size
    if signal
      Process.kill(:USR1, target.pid)
    else
      target.send_line("finish")
    end
    target.wait_for(/\Abye\z/, from: count)
    status = target.wait_exit
    assert status.success?, "exit #{status.inspect}#{target.context}"
    assert_includes target.lines, "checksum #{TARGET_CHECKSUM}"
  end

  def test_allocating_loop
    finish(attach_stats_detach("loop", site_mark: "loop"))
  end

  def test_interrupted_where_file_io_and_thread_are_the_apps_own_constants
    finish(attach_stats_detach("shadowed", site_mark: "shadowed"))
  end

  def test_sleeping_forever
    finish(attach_stats_detach("sleep"))
  end

  def test_blocked_in_read_on_a_pipe
    target = attach_stats_detach("commands")
    # The read that was in progress while attached returns what the pipe carried, intact.
    target.send_line("echo after detach #{'z' * 3000}")
    target.wait_for(/\Aread: after detach z{3000}\z/)
    finish(target, signal: false)
  end

  def test_eight_allocating_threads
    # From Ruby 3.3 a thread that gives the GVL up waits behind every busy thread (100 ms each)
    # to get it back: memprof's Ruby thread must give it up rarely (no rubygems activation while
    # loading, replies written with the GVL held) to attach within the agent's patience.
    finish(attach_stats_detach("threads", site_mark: "threads"))
  end

  def test_looping_gc_compact
    skip "GC.compact is not supported by this Ruby" unless GC.respond_to?(:compact)
    # GC.compact can move the String a blocking IO#read fills without the GVL: the agent's
    # requests are read into C memory instead (src/ruby/frame_reader.h).
    finish(attach_stats_detach("compact", site_mark: "compact"))
  end
end
