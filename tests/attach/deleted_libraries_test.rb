# frozen_string_literal: true

# Libraries deleted since the process loaded them: an upgrade (apt's libc6, a new Ruby) renames
# new files over the ones every running process has mapped, and /proc/PID/maps says
# "(deleted)". memprof reads such an object from its mapping (/proc/PID/map_files), never from
# the path, which names another file by then, or none.
require "fileutils"
require_relative "attach_helper"

class AttachDeletedLibrariesTest < Minitest::Test
  include AttachTestHelper

  def setup
    super
    skip "reading a deleted library's mapping (/proc/PID/map_files) needs root" unless Process.uid.zero?
  end

  # Before: attach (and trace, native: every command that injects) said "cannot read the
  # symbols of its C library: /proc/PID/root/.../libc.so.6: No such file or directory", and
  # `symbols PID` found none of libc's.
  def test_a_process_whose_libc_was_deleted_is_read_attached_and_detached
    libs = File.join(@tmpdir, "lib")
    Dir.mkdir(libs)
    libc = File.join(libs, "libc.so.6")
    FileUtils.cp(mapped_path(File.read("/proc/self/maps"), "libc.so.6"), libc)
    script = File.join(@tmpdir, "app.rb")
    File.write(script, <<~RUBY)
      # frozen_string_literal: true
      $stdout.sync = true
      puts "ready \#{Process.pid}"
      $stdin.each_line do |line|
        break if line.strip == "finish"
        $kept = Array.new(500) { |i| format("kept %d", i) } # MARK: kept
        puts "made"
      end
    RUBY
    target = spawn_target(command: [RbConfig.ruby, script], env: { "LD_LIBRARY_PATH" => libs }, script: script)
    target.wait_for(/\Aready \d+\z/)
    File.delete(libc)
    maps = File.read("/proc/#{target.pid}/maps")
    libc_start = maps.lines.find { |line| line.end_with?("#{libc} (deleted)\n") }&.split("-")&.first
    assert libc_start, "the process does not map #{libc}:\n#{maps}"

    # Where malloc is in the process: the mapping's start plus its value in the library's file.
    value = memprof!("symbols", mapped_path(File.read("/proc/self/maps"), "libc.so.6"), "^malloc$")
            .lines.last.split.first
    out = memprof!("symbols", target.pid, "^malloc$")
    assert_includes out, format("0x%016x", Integer(libc_start, 16) + Integer(value, 16))
    assert_match(%r{ #{Regexp.escape(libc)}$}, out)

    attach!(target)
    target.send_line("make")
    target.wait_for(/\Amade\z/)
    assert_equal 500, live_stats(target.pid)["#{script}:#{marked_line(script, 'kept')}:String"]
    detach!(target)
    target.send_line("finish")
    assert target.wait_exit.success?, target.context
  end

  private

  # The path a maps text names for the object whose file name is `name`.
  def mapped_path(maps, name)
    maps.lines.map { |line| line.split(" ", 6)[5].to_s.strip }.find { |path| File.basename(path) == name } ||
      raise("no #{name} in the maps")
  end
end
