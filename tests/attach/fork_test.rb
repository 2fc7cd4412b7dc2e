# frozen_string_literal: true

# Forked workers (issue 10, items 5 and 7), with a small preforking server of our own
# (fixtures/prefork.rb: a master forking 2 workers that each leak at one line):
#   - attaching to a worker after the fork works, and counts that worker's objects only;
#   - a master attached before it forks: each worker gets its own agent (its own socket,
#     /tmp/memprof-UID/WORKERPID.sock) and `memprof stats -p WORKER` answers with the worker's
#     objects, exactly.
#   - `--children` attaches, reads and detaches a master and its workers together, leaving out
#     a worker that has died (a zombie) instead of failing as a whole.
require_relative "attach_helper"

class AttachForkTest < Minitest::Test
  include AttachTestHelper

  def start_server
    @master = spawn_target("prefork.rb")
    @master.wait_for(/\Amaster #{@master.pid}\z/)
    @site = "#{@master.script}:#{marked_line(@master.script, 'leak')}:String"
    @master
  end

  def fork_workers
    @master.send_line("fork")
    @workers = Array.new(2) { |i| Integer(@master.wait_for(/\Aworker #{i} \d+\z/).split.last) }
    @workers.each_with_index { |_, i| @master.wait_for(/\Aworker #{i} leaked #{(i + 1) * 300}\z/) }
    @workers
  end

  def teardown
    # The workers are the master's children: ended (by the pids the master reported, while
    # they are still its children) before the master is.
    (@workers || []).each do |pid|
      ppid = File.read("/proc/#{pid}/status")[/^PPid:\s*(\d+)/, 1].to_i
      Process.kill(:KILL, pid) if ppid == @master.pid
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end
    super
  end

  # Kills a worker, which stays a zombie: the master does not reap it.
  def kill_worker(index)
    Process.kill(:KILL, @workers[index])
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    sleep 0.01 until File.read("/proc/#{@workers[index]}/stat").split[2] == "Z" ||
                     Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
  end

  def leak_more(index, expected_total)
    from = @master.lines.size
    @master.send_line("#{index} more")
    @master.wait_for(/\Aworker #{index} leaked #{expected_total}\z/, from: from)
  end

  def test_attach_to_a_worker_after_the_fork
    start_server
    fork_workers
    worker = @workers[1]
    attach!(worker)
    refute live_stats(worker).key?(@site), "objects made before attach are not tracked"
    leak_more(1, 1200)
    assert_equal 600, live_stats(worker)[@site]
    # The other worker and the master have no agent.
    [@workers[0], @master.pid].each do |pid|
      _, err, status = memprof("stats", "-p", pid)
      assert_equal 1, status.exitstatus
      assert_match(/no memprof agent in process #{pid}/, err)
    end
    detach!(worker)
    leak_more(1, 1800)
    leak_more(0, 600)
    assert_alive(@master)
  end

  def test_master_attached_before_it_forks
    start_server
    attach!(@master)
    fork_workers
    @workers.each_with_index do |pid, index|
      socket = "/tmp/memprof-#{Process.uid}/#{pid}.sock"
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
      sleep 0.01 until File.socket?(socket) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      assert File.socket?(socket), "worker #{pid} has no agent socket #{socket}"
      # Each worker's own objects, not the other's nor the master's.
      assert_equal (index + 1) * 300, live_stats(pid)[@site], "worker #{index} (pid #{pid})"
    end
    refute live_stats(@master.pid).key?(@site), "the master never ran the workers' line"

    leak_more(0, 600)
    assert_equal 600, live_stats(@workers[0])[@site]
    assert_equal 600, live_stats(@workers[1])[@site]

    # Detaching a worker leaves the master and the other worker attached.
    detach!(@workers[0])
    assert_equal 600, live_stats(@workers[1])[@site]
    live_stats(@master.pid)
    # Detaching the master says which worker still has an agent (before: nothing).
    _, err, status = memprof("detach", "-p", @master.pid)
    assert_equal 0, status.exitstatus, err
    assert_equal "memprof: 1 descendant of process #{@master.pid} still has a memprof agent (#{@workers[1]}): " \
                 "detach them with -p #{@master.pid} --children, or each with -p\n", err
    detach!(@workers[1])
    leak_more(1, 1200)
    assert_alive(@master)
    @workers.each { |pid| assert File.exist?("/proc/#{pid}"), "worker #{pid} ended" }
  end
  # A worker killed while the tree is attached is a zombie until its master reaps it: stats
  # --children read the rest and named it (before: 'process N has ended (a zombie...)' and exit
  # 1 for the whole tree), and detach --children (before: no such option) detaches the rest.
  def test_children_leaves_out_a_dead_worker
    start_server
    fork_workers
    out = memprof!("attach", "-p", @master.pid, "--children", target: @master)
    assert_equal 3, out.scan(/^tracking process/).size, out
    leak_more(1, 1200)
    kill_worker(0)
    out, err, status = memprof("stats", "-p", @master.pid, "--children")
    assert_equal 0, status.exitstatus, err
    assert_match(/\Amemprof: left out process #{@workers[0]}: .*zombie/, err)
    assert_equal 600, out.lines.map(&:split).find { |_, site| site == @site }&.first.to_i, out
    out, err, status = memprof("detach", "-p", @master.pid, "--children")
    assert_equal 0, status.exitstatus, err
    assert_equal [@master.pid, @workers[1]].sort, out.scan(/^detached from process (\d+)/).flatten.map(&:to_i).sort
    assert_match(/left out process #{@workers[0]}/, err)
    [@master.pid, @workers[1]].each { |pid| refute File.exist?("/tmp/memprof-#{Process.uid}/#{pid}.sock") }
    assert_alive(@master)
  end

  # --children --json prints one JSON document, an array with a process left out as {"pid",
  # "error"}. Before: one object per line, and nothing for the process left out.
  def test_children_json_is_one_document
    start_server
    fork_workers
    attached = JSON.parse(memprof!("attach", "-p", @master.pid, "--children", "--json", target: @master))
    assert_equal [@master.pid, *@workers].sort, attached.map { |process| process["pid"] }.sort
    assert attached.all? { |process| process["started"] == true }, attached.inspect
    kill_worker(0)
    out, err, status = memprof("detach", "-p", @master.pid, "--children", "--json")
    assert_equal 0, status.exitstatus, err
    detached, left_out = JSON.parse(out).partition { |process| process["detached"] }
    assert_equal [@master.pid, @workers[1]].sort, detached.map { |process| process["pid"] }.sort
    assert_equal [@workers[0]], left_out.map { |process| process["pid"] }
    assert_match(/zombie/, left_out.first["error"])
    # Nothing left to detach: still one document, every process with its error.
    out, err, status = memprof("detach", "-p", @master.pid, "--children", "--json")
    assert_equal 1, status.exitstatus, err
    assert_equal [@master.pid, *@workers].sort, JSON.parse(out).map { |process| process["pid"] }.sort
    assert JSON.parse(out).all? { |process| process["error"] }, out
    assert_alive(@master)
  end
end
