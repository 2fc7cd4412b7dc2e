# frozen_string_literal: true

# A process with mounts and pids of its own, as a systemd service with PrivateTmp (its own /tmp)
# or a container (its own /proc, where it is pid 1): its agent's socket is in its own
# /tmp/memprof-UID, named with the pid it knows itself by, and its dump is written in its own view
# of the filesystem. The target here is made with unshare(1), which needs root.
require "fileutils"
require_relative "attach_helper"

class AttachNamespacesTest < Minitest::Test
  include AttachTestHelper

  def setup
    super
    skip "making namespaces (unshare) needs root" unless Process.uid.zero?
    _, err, status = Open3.capture3("unshare", "--mount", "--pid", "--fork", "--mount-proc", "true")
    skip "this machine makes no namespaces: unshare: #{err.strip}" unless status.success?
  end

  # Before: the injector's return stub signalled the thread by the pid and tid memprof sees, which
  # name no thread inside the namespace, so every attach "did not return within 20000 ms" (the
  # agent loaded all the same); with a private /tmp alone, attach said "the agent was loaded but
  # its socket did not appear within 3 s"; and dump said "wrote FILE" of a file memprof could not
  # see.
  def test_a_process_with_its_own_tmp_and_pids_is_attached_read_and_dumped
    private_dir = File.join(@tmpdir, "private")
    Dir.mkdir(private_dir)
    socket_dir = "/tmp/memprof-0"
    FileUtils.mkdir_p(socket_dir, mode: 0o700)
    script = File.join(@tmpdir, "app.rb")
    File.write(script, <<~RUBY)
      # frozen_string_literal: true
      $stdout.sync = true
      $kept = []
      puts "ready \#{Process.pid}"
      $stdin.each_line do |line|
        break if line.strip == "finish"
        1000.times { |i| $kept << format("kept %d", i) } # MARK: kept
        puts "made"
      end
    RUBY
    # Its own /tmp/memprof-0 and its own (empty) private directory, over the ones memprof sees.
    inside = "mount -t tmpfs -o mode=0700 tmpfs #{socket_dir} && mount -t tmpfs tmpfs #{private_dir} && " \
             "exec #{RbConfig.ruby} #{script}"
    launcher = spawn_target(command: ["unshare", "--mount", "--propagation", "private", "--pid", "--fork",
                                      "--mount-proc", "--kill-child", "sh", "-c", inside], script: script)
    launcher.wait_for(/\Aready 1\z/) # pid 1 in its namespace
    pid = Integer(File.read("/proc/#{launcher.pid}/task/#{launcher.pid}/children").split.fetch(0))

    assert_match(/^tracking process #{pid}: /, memprof!("attach", "-p", pid))
    # Listed, though its socket is in its own /tmp.
    assert_match(/^ *#{pid}  #{Regexp.escape(RUBY_VERSION)} +tracking +#{Regexp.escape("#{RbConfig.ruby} #{script}")}$/,
                 memprof!("ps"))
    launcher.send_line("make")
    launcher.wait_for(/\Amade\z/)
    assert_equal 1000, live_stats(pid)["#{script}:#{marked_line(script, 'kept')}:String"]

    dump = File.join(private_dir, "heap.json")
    from_here = "/proc/#{pid}/root#{dump}"
    out = memprof!("dump", "-p", pid, "-o", dump)
    assert_includes out, "process #{pid} has mounts of its own (systemd's PrivateTmp, a container): " \
                         "from here the file is #{from_here}\n"
    assert_includes out, "next: memprof analyze #{from_here}\n"
    assert_equal [], Dir.children(private_dir) # written in the process's own directory, not here
    assert_equal 1000, File.foreach(from_here).grep(/"value":"kept \d+"/).size

    detach!(pid)
    launcher.send_line("finish")
    assert launcher.wait_exit.success?, launcher.context
  end

  # A container without memprof's installation in its filesystem: said before anything is
  # injected. Before: the agent was injected, then "loading memprof into the process: LoadError:
  # cannot load such file -- .../lib/memprof.rb".
  def test_a_process_whose_mounts_lack_memprofs_installation_is_refused_before_injection
    lib = File.realpath(File.expand_path("../lib", File.dirname(MEMPROF)))
    script = File.join(@tmpdir, "app.rb")
    File.write(script, "$stdout.sync = true\nputs \"ready\"\n$stdin.gets\n")
    target = spawn_target(command: ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                    "mount -t tmpfs tmpfs #{lib} && exec #{RbConfig.ruby} #{script}"], script: script)
    target.wait_for(/\Aready\z/)
    out, err, status = memprof("attach", "-p", target.pid)
    assert_equal [1, ""], [status.exitstatus, out], err
    assert_equal "memprof: process #{target.pid} has mounts of its own (a container?), and memprof's " \
                 "#{lib}/memprof.rb is not in its filesystem: run memprof inside it, or make #{lib} visible there\n", err
    refute_includes File.read("/proc/#{target.pid}/maps"), "memprof_agent"
    target.send_line("")
    assert target.wait_exit.success?, target.context
  end
end
