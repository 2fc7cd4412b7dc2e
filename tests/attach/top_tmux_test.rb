# frozen_string_literal: true

# `memprof top` driven in a real terminal (issue 10, item 7): tmux runs it in an 80x24 pane;
# the test types keys (send-keys) and reads the screen (capture-pane). Rows show up, 'c'
# regroups by class, 'l' by file:line, 'q' quits and puts the terminal back (the alternate
# screen is left, echo and canonical mode are on again). tmux runs on a private socket of this
# test's own, killed at the end. Skipped when tmux is missing (scripts/install-deps installs it).
require_relative "attach_helper"

class AttachTopTmuxTest < Minitest::Test
  include AttachTestHelper

  def setup
    super
    skip "needs tmux (scripts/install-deps)" unless system("tmux -V", out: File::NULL, err: File::NULL)
    @socket = "memprof-top-test-#{Process.pid}"
  end

  def teardown
    system("tmux", "-L", @socket, "kill-server", out: File::NULL, err: File::NULL) if @socket
    super
  end

  def tmux(*args)
    out, err, status = Open3.capture3("tmux", "-L", @socket, *args)
    assert status.success?, "tmux #{args.join(' ')}: #{err}"
    out
  end

  def screen = tmux("capture-pane", "-p", "-t", "top")

  # The contents of `path` once they include `text` (a failure after PATIENCE).
  def wait_for_file_to_include(path, text)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    loop do
      written = File.exist?(path) ? File.binread(path) : ""
      return written if written.include?(text)
      flunk "#{path} never included #{text.inspect}:\n#{written.inspect}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.1
    end
  end

  # Waits until the screen satisfies the block; returns it.
  def wait_for_screen(what)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + PATIENCE
    loop do
      text = screen
      return text if yield(text)
      flunk "the screen never showed #{what}:\n#{text}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.1
    end
  end

  def test_top_in_a_terminal
    target = spawn_target("target.rb", "loop")
    target.wait_for(/\Aready #{target.pid}\z/)
    attach!(target)
    site = "#{File.basename(target.script)}:#{marked_line(target.script, "loop")}"

    script = File.join(@tmpdir, "top.sh")
    File.write(script, <<~SH)
      echo BEFORE-TOP
      #{MEMPROF} top -p #{target.pid} --interval 200ms
      echo "TOP-EXIT=$?"
      stty -a | tr ' ;' '\\n\\n' | grep -x -e '-\\?icanon' -e '-\\?echo' -e '-\\?opost'
      echo AFTER-TOP
      exec sleep 600
    SH
    tmux("new-session", "-d", "-s", "top", "-x", "80", "-y", "24", "sh #{script}")
    # What top writes, byte for byte: each line ends "\r\n" ("\r\r\n" when the terminal's
    # output processing was left on and added its own return).
    raw = File.join(@tmpdir, "raw.log")
    tmux("pipe-pane", "-o", "-t", "top", "cat >> #{raw}")

    text = wait_for_screen("rows by file:line + class") do |s|
      s.include?("memprof top - pid #{target.pid}") && s.include?("by file:line + class") &&
        s.lines.any? { |line| line =~ /\A\s*\d.*#{Regexp.escape(site)}.*String/ }
    end
    assert_equal "1", tmux("display-message", "-p", "-t", "top", '#{alternate_on}').strip
    assert text.lines.all? { |line| line.chomp.size <= 80 }, "wider than the pane:\n#{text}"
    assert_operator text.lines.size, :<=, 24

    tmux("send-keys", "-t", "top", "c")
    text = wait_for_screen("rows by class") do |s|
      s.include?("by class,") && s.lines.any? { |line| line =~ /\A\s*\d.*\d  String\s*\z/ }
    end
    refute_includes text, site, "grouped by class, yet a file:line shows"
    # tmux hands the pane's bytes to pipe-pane's cat on its own time: the screen may show a
    # frame before the file has it (CI saw an empty file once).
    written = wait_for_file_to_include(raw, "String\r\n")
    refute_includes written, "\r\r\n"

    tmux("send-keys", "-t", "top", "l")
    wait_for_screen("rows by file:line") do |s|
      s.include?("by file:line,") && s.include?(site) && s.lines.none? { |line| line.include?("String") }
    end

    tmux("send-keys", "-t", "top", "q")
    text = wait_for_screen("top's exit") { |s| s.include?("AFTER-TOP") }
    assert_includes text, "TOP-EXIT=0"
    assert_includes text, "BEFORE-TOP", "the primary screen was not restored"
    refute_includes text, "memprof top - pid", "top's screen is still shown"
    assert_equal "0", tmux("display-message", "-p", "-t", "top", '#{alternate_on}').strip
    assert_match(/^icanon$/, text, "canonical mode not restored")
    assert_match(/^echo$/, text, "echo not restored")
    assert_match(/^opost$/, text, "output processing not restored")

    detach!(target)
    assert_alive(target)
  end
end
