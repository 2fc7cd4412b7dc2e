# frozen_string_literal: true

# Many attach/detach cycles against a Ruby under allocation load (issue 10, item 7): no crash,
# and the target's own output -- the same checksum computed round after round while memprof
# comes and goes -- never changes.
#
# The issue asks for 1,000 cycles. One cycle (re-inject to restart the agent, load, start, a
# stats request every other cycle, stop, detach) took about 0.42 s on the shared 2-core
# development machine (200 cycles: 86 s, the machine ruby 3.1): MEMPROF_ATTACH_CYCLES sets the
# count -- 200 in `attach.cycles`, 1,000 in `attach.cycles_1000` (label "long", `make
# test-long`); see tests/attach/CMakeLists.txt.
require_relative "attach_helper"

class AttachCyclesTest < Minitest::Test
  include AttachTestHelper

  def test_attach_detach_cycles_under_allocation_load
    cycles = Integer(ENV.fetch("MEMPROF_ATTACH_CYCLES", "200"))
    target = spawn_target("target.rb", "rounds")
    target.wait_for(/\Aready #{target.pid}\z/)
    reference = target.wait_for(/\Around 0 /).split.last
    assert_equal "51825009", reference, "fixtures/target.rb computes checksum(5_000) differently"
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    cycles.times do |i|
      attach!(target)
      memprof!("stats", "-p", target.pid, "--top", 3, target: target) if i.even?
      detach!(target)
      assert_alive(target)
    end
    elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    $stderr.puts format("%d attach/detach cycles: %.1f ms each", cycles, elapsed * 1000 / cycles)

    # It ran on, and every round computed the same number.
    count = target.lines.size
    target.wait_for(/\Around \d+ /, from: count)
    Process.kill(:USR1, target.pid)
    target.wait_for(/\Abye\z/)
    assert target.wait_exit.success?, target.context
    rounds = target.lines.grep(/\Around /)
    assert_operator rounds.size, :>, 1
    wrong = rounds.reject { |line| line.split.last == reference }
    assert_empty wrong, "rounds whose checksum is not #{reference}"
    assert_includes target.lines, "checksum #{TARGET_CHECKSUM}"
  end
end

