# frozen_string_literal: true

# A second uid cannot use the agent's socket (issue 10, item 7). The test runs as root and
# spawns the client side as uid 65534 (setpriv):
#   - plainly, the 0700 directory /tmp/memprof-0 keeps it from even reaching the socket, and
#     memprof says permission denied (one line, exit 1);
#   - with CAP_DAC_OVERRIDE (which gets it through the directory and the socket's 0600), the
#     agent itself refuses the connection after SO_PEERCRED: "uid 65534 may not control ...".
# In both cases the target is untouched and root still controls it. Skipped when not root.
require_relative "attach_helper"

class AttachOtherUidTest < Minitest::Test
  include AttachTestHelper

  NOBODY = 65_534
  AS_NOBODY = ["setpriv", "--reuid=#{NOBODY}", "--regid=#{NOBODY}", "--clear-groups"].freeze
  # Keeps CAP_DAC_OVERRIDE across the uid change (and only it), in the effective set of memprof.
  AS_NOBODY_PAST_PERMISSIONS = [*AS_NOBODY, "--securebits=+no_setuid_fixup",
                                "--inh-caps=-all,+dac_override", "--ambient-caps=+dac_override",
                                "--bounding-set=-all,+dac_override"].freeze

  def setup
    super
    skip "needs root, to run memprof as another uid (setpriv)" unless root?
    skip "needs setpriv (util-linux)" unless system("setpriv --version", out: File::NULL, err: File::NULL)
  end

  def test_another_uid_cannot_use_the_socket
    target = spawn_target("target.rb", "commands")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    # memprof itself must be reachable by the other uid (the build tree may be private).
    skip "#{MEMPROF} is not executable by uid #{NOBODY}" unless executable_by_nobody?(MEMPROF)

    out, err, status = memprof("stats", "-p", target.pid, prefix: AS_NOBODY)
    assert_equal 1, status.exitstatus, "stdout: #{out}\nstderr: #{err}"
    assert_empty out
    assert_equal 1, err.lines.size, err
    assert_match(/permission denied.*uid 0/i, err)

    %w[stats detach].each do |command|
      out, err, status = memprof(command, "-p", target.pid, prefix: AS_NOBODY_PAST_PERMISSIONS)
      assert_equal 1, status.exitstatus, "#{command}: stdout: #{out}\nstderr: #{err}"
      assert_equal 1, err.lines.size, err
      assert_match(/uid #{NOBODY} may not control this process/, err)
    end

    # Nothing happened to the target or its agent: root still reads it, and it runs on.
    target.send_line("alloc")
    target.wait_for(/\Aallocated 10000\z/)
    site = "#{target.script}:#{marked_line(target.script, 'kept')}:String"
    assert_equal 10_000, live_stats(target.pid)[site]
    detach!(target)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  # Another uid's process that was never attached: its maps are hidden, so whether it runs Ruby
  # is not known (before: "no memprof agent in process N, which is not running Ruby", of a Ruby).
  def test_a_process_of_another_uid_is_not_said_to_run_no_ruby
    skip "#{MEMPROF} is not executable by uid #{NOBODY}" unless executable_by_nobody?(MEMPROF)
    # Debian's ruby: the matrix Rubies live under /root, which uid 65534 cannot read.
    ruby = "/usr/bin/ruby"
    skip "#{ruby} is not executable by uid #{NOBODY}" unless executable_by_nobody?(ruby)
    pid = Process.spawn(*AS_NOBODY, ruby, "-e", "sleep", in: File::NULL)
    begin
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
      until File.read("/proc/#{pid}/maps").include?("libruby") ||
            Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        sleep 0.02
      end
      # One sentence whether uid 65534's agent directory exists (it does once any process of
      # that uid ran an agent on this machine) or not: before, "permission denied on
      # /tmp/memprof-65534" or "no memprof agent (run: memprof attach)", which another uid
      # cannot do. Both cases are run: the directory is made (as that uid) if it was absent.
      directory = "/tmp/memprof-#{NOBODY}"
      made = !File.exist?(directory)
      [false, true].each do |second|
        if second
          break unless made
          assert system(*AS_NOBODY, "mkdir", "-m", "700", directory), "mkdir #{directory}"
        end
        out, err, status = memprof("stats", "-p", pid, prefix: ["setpriv", "--reuid=#{NOBODY - 1}",
                                                                "--regid=#{NOBODY - 1}", "--clear-groups"])
        assert_equal 1, status.exitstatus, "stdout: #{out}\nstderr: #{err}"
        assert_equal "memprof: permission denied: process #{pid} belongs to uid #{NOBODY} and memprof runs " \
                     "as uid #{NOBODY - 1}: only that user or root can reach or attach its agent\n", err
      end
    ensure
      Process.kill("KILL", pid)
      Process.wait(pid)
      Dir.rmdir(directory) if made && File.directory?(directory)
    end
  end

  private

  def executable_by_nobody?(path)
    system(*AS_NOBODY, "test", "-x", path, out: File::NULL, err: File::NULL)
  end
end
