# frozen_string_literal: true

# Shared by the attach tests (issue 10, item 7): each test spawns real Ruby processes -- the
# Ruby running the test is the *target* Ruby (the machine's, or one of the test matrix's:
# cmake/ruby_tests.cmake) -- and drives them with the build's `memprof` executable
# (MEMPROF_CLI, set by tests/attach/CMakeLists.txt).
#
# Rules: a test touches only processes it spawned itself, by the pid Process.spawn returned (or
# a worker pid its own fixture reported, checked to be that fixture's child); every one is
# killed and reaped in teardown, whatever happened. No assertion is about time: the waits below
# are bounded only so that a broken agent fails the test instead of hanging it.
require "minitest/autorun"
require "open3"
require "rbconfig"
require "json"
require "tmpdir"
require "timeout"

module AttachTestHelper
  FIXTURES = File.expand_path("fixtures", __dir__)
  MEMPROF = ENV.fetch("MEMPROF_CLI") { raise "MEMPROF_CLI is not set (run the test through ctest)" }
  # How long a wait for a target's output may last before the test gives up (not a timing
  # assertion: only what turns a hang into a failure).
  PATIENCE = Integer(ENV.fetch("MEMPROF_TEST_PATIENCE", "60"))
  # What fixtures/target.rb prints as "checksum N" at its end (a fixed computation).
  TARGET_CHECKSUM = 38_895_834

  # A spawned process: its pid, the write end of its stdin, and everything it printed so far
  # (a thread drains its stdout, so that it never blocks writing).
  class Target
    attr_reader :pid, :stdin, :script, :stderr_path

    def initialize(pid, stdin, stdout, script, stderr_path)
      @pid = pid
      @stdin = stdin
      @script = script
      @stderr_path = stderr_path
      @lines = []
      @mutex = Mutex.new
      @changed = ConditionVariable.new
      @reader = Thread.new do
        stdout.each_line do |line|
          @mutex.synchronize do
            @lines << line.chomp
            @changed.broadcast
          end
        end
      rescue IOError
        nil
      ensure
        @mutex.synchronize do
          @eof = true
          @changed.broadcast
        end
      end
    end

    def lines = @mutex.synchronize { @lines.dup }

    # The first line (from index `from`) matching `pattern`, waiting for it.
    def wait_for(pattern, from: 0, what: pattern.inspect)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
      @mutex.synchronize do
        loop do
          found = @lines[from..]&.find { |line| pattern.match?(line) }
          return found if found
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          raise Minitest::Assertion, "process #{pid} never printed #{what}#{context}" if @eof || left <= 0

          @changed.wait(@mutex, left)
        end
      end
    end

    def stderr_text = File.exist?(stderr_path) ? File.read(stderr_path) : ""

    def context
      "\n--- its stdout (last lines)\n#{@lines.last(20).join("\n")}\n--- its stderr\n#{stderr_text[-3000..] || stderr_text}"
    end

    def send_line(text)
      stdin.puts(text)
      stdin.flush
    end

    # nil while running; else the Process::Status (reaped).
    def exited
      return @status if @status

      _, @status = Process.waitpid2(pid, Process::WNOHANG)
      @status
    end

    def wait_exit
      return @status if @status

      Timeout.timeout(PATIENCE) { _, @status = Process.waitpid2(pid) }
      @reader.join(PATIENCE)
      @status
    end

    def alive? = exited.nil?

    # Kills (by its pid) and reaps the process unless it already ended.
    def kill
      return if @status

      begin
        Process.kill(:KILL, pid)
      rescue Errno::ESRCH
        nil
      end
      wait_exit
    rescue Timeout::Error
      nil
    ensure
      stdin.close unless stdin.closed?
    end
  end

  def setup
    super
    @targets = []
    @tmpdir = Dir.mktmpdir("memprof-attach-test")
    File.chmod(0o755, @tmpdir)
  end

  def teardown
    @targets.reverse_each(&:kill)
    FileUtils.rm_rf(@tmpdir)
    super
  end

  # Spawns `ruby FIXTURE ARGS` (or any command with `command:`) with pipes for stdin and stdout.
  def spawn_target(fixture = nil, *args, command: nil, env: {}, script: nil)
    command ||= [RbConfig.ruby, File.join(FIXTURES, fixture), *args]
    stdin_read, stdin_write = IO.pipe
    stdout_read, stdout_write = IO.pipe
    stderr_path = File.join(@tmpdir, "stderr-#{@targets.size}.txt")
    pid = Process.spawn(env, *command, in: stdin_read, out: stdout_write, err: stderr_path,
                                       chdir: @tmpdir)
    stdin_read.close
    stdout_write.close
    target = Target.new(pid, stdin_write, stdout_read,
                        script || (fixture && File.join(FIXTURES, fixture)), stderr_path)
    @targets << target
    target
  end

  # Runs memprof; returns [stdout, stderr, Process::Status]. `prefix` runs it through another
  # command (setpriv ...).
  def memprof(*args, prefix: [])
    Open3.capture3(*prefix, MEMPROF, *args.map(&:to_s))
  end

  # Runs memprof and fails the test unless it exits 0; returns its stdout.
  def memprof!(*args, target: nil)
    out, err, status = memprof(*args)
    assert status.success?,
           "memprof #{args.join(' ')} exited #{status.exitstatus}\n--- stdout\n#{out}\n--- stderr\n#{err}" \
           "#{target&.context}"
    out
  end

  # `memprof stats -p PID` as {"FILE:LINE:CLASS" => count}.
  def live_stats(pid)
    memprof!("stats", "-p", pid).lines.each_with_object({}) do |line, out|
      count, site = line.strip.split(" ", 2)
      out[site] = Integer(count) if count&.match?(/\A\d+\z/)
    end
  end

  # The line of `file` holding the comment `# MARK: name`.
  def marked_line(file, name)
    index = File.readlines(file).index { |line| line.include?("# MARK: #{name}") }
    raise "#{file} has no '# MARK: #{name}'" unless index

    index + 1
  end

  def assert_alive(target)
    assert target.alive?, "process #{target.pid} ended: #{target.exited.inspect}#{target.context}"
  end

  # A Ruby target that says "ready PID" (stdout unbuffered, Ractor warnings off), then runs
  # `body` (a loop over its stdin's lines, as jobs); returned once it is ready.
  def ruby_job_target(body)
    script = File.join(@tmpdir, "jobs-#{@targets.size}.rb")
    File.write(script, "$stdout.sync = true\nWarning[:experimental] = false\nputs \"ready \#{Process.pid}\"\n#{body}")
    target = spawn_target(command: [RbConfig.ruby, script], script: script)
    target.wait_for(/\Aready \d+\z/)
    target
  end

  # attach!/detach! take a Target or a pid.
  def attach!(target)
    pid = target.is_a?(Integer) ? target : target.pid
    out = memprof!("attach", "-p", pid, target: target.is_a?(Integer) ? nil : target)
    assert_match(/tracking process #{pid}/, out)
    out
  end

  def detach!(target)
    pid = target.is_a?(Integer) ? target : target.pid
    out = memprof!("detach", "-p", pid, target: target.is_a?(Integer) ? nil : target)
    assert_match(/detached from process #{pid}/, out)
    # Gone once "detached" is said: a re-attach right after must not meet the leaving agent's
    # socket (the agent removed it after its reply: CI once saw it still there).
    socket = "/tmp/memprof-#{File.stat("/proc/#{pid}").uid}/#{pid}.sock"
    refute File.exist?(socket), "#{socket} outlived the detach"
    out
  end

  def root? = Process.uid.zero?

  # Sends a job line to a fixture and waits for its own "done" line (not one of an earlier job).
  def run_job(target, job, done)
    count = target.lines.size
    target.send_line(job)
    target.wait_for(done, from: count)
  end

  # Starts `memprof ARGS` in the background (a recording command: trace, native) and waits
  # until its stderr says `ready`.
  def start_recording(*args, ready:)
    recording = spawn_target(command: [MEMPROF, *args.map(&:to_s)])
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    until recording.stderr_text.include?(ready)
      if !recording.alive? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        flunk("memprof #{args.first} never started#{recording.context}")
      end
      sleep 0.02
    end
    recording
  end

  # Ctrl-C, as a user stops a recording; its stdout lines.
  def stop_recording(recording)
    Process.kill(:INT, recording.pid)
    status = recording.wait_exit
    assert status.success?, "memprof exited #{status.inspect}#{recording.context}"
    recording.lines
  end
end
