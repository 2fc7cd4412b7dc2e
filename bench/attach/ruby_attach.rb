# frozen_string_literal: true

# What `memprof attach` costs a running Ruby process, measured inside it, next to gdb's way of
# loading a library (how heaptrack and memray attach):
#   pause        the target's largest gap between two iterations of its allocation loop while
#                the tool loads (baseline: the same window with nothing happening)
#   first data   from `memprof attach` returning to the first `memprof stats` reply
#   overhead     the loop's iterations per second before attach / attached / after detach
#
#   ruby bench/attach/ruby_attach.rb [--memprof build/memprof] [--rounds 5] [--ruby RUBY]
# A benchmark, not a test: numbers depend on the machine's load. Needs gdb for its column.
require "optparse"
require "open3"
require "rbconfig"

options = { memprof: File.expand_path("../../build/memprof", __dir__), rounds: 5,
            ruby: RbConfig.ruby }
OptionParser.new do |o|
  o.on("--memprof PATH") { |v| options[:memprof] = v }
  o.on("--rounds N", Integer) { |v| options[:rounds] = v }
  o.on("--ruby PATH") { |v| options[:ruby] = v }
end.parse!
agent = File.join(File.dirname(options[:memprof]), "libmemprof_agent.so")

# The target: an allocation loop that, on each line read from stdin, prints and resets its
# largest gap between iterations (ms) and its iterations per second since the last line.
TARGET = <<~'RUBY'
  $stdout.sync = true
  gap = 0.0; n = 0; t0 = last = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  Thread.new do
    while $stdin.gets
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      puts format("%.3f %.0f", gap * 1000, n / (now - t0))
      gap = 0.0; n = 0; t0 = now
    end
    exit!(0)
  end
  loop do
    a = Array.new(8) { |i| "x#{i}" }
    n += 1
    if (n & 255).zero?
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      gap = now - last if now - last > gap
      last = now
    end
  end
RUBY

class Target
  def initialize(ruby)
    @in, @out, @wait = Open3.popen2(ruby, "-e", TARGET)
    sleep 0.5
    read
  end

  def pid = @wait.pid

  # [largest gap in ms, iterations per second] since the previous read.
  def read
    @in.puts
    @out.gets.split.map(&:to_f)
  end

  def stop
    @in.close
    @wait.value
  end
end

def time_ms
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  yield
  (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) * 1000
end

def run!(*command)
  out, status = Open3.capture2e(*command)
  raise "#{command.join(' ')}: #{out}" unless status.success?

  out
end

def median(values) = values.sort[values.size / 2]

rows = Hash.new { |h, k| h[k] = [] }
options[:rounds].times do
  target = Target.new(options[:ruby])
  sleep 1
  rows[:baseline_gap] << target.read[0]
  sleep 1
  _, rate_before = target.read
  rows[:attach_wall] << time_ms { run!(options[:memprof], "attach", "-p", target.pid.to_s) }
  rows[:first_data] << time_ms { run!(options[:memprof], "stats", "-p", target.pid.to_s, "--top", "1") }
  rows[:attach_gap] << target.read[0]
  sleep 2
  _, rate_attached = target.read
  run!(options[:memprof], "detach", "-p", target.pid.to_s)
  target.read
  sleep 2
  _, rate_after = target.read
  rows[:overhead_attached] << rate_before / rate_attached
  rows[:overhead_detached] << rate_before / rate_after
  target.stop

  next unless system("which gdb > /dev/null")

  target = Target.new(options[:ruby])
  sleep 1
  target.read
  rows[:gdb_wall] << time_ms do
    run!("gdb", "-p", target.pid.to_s, "-batch", "-nx", "-ex",
         "call (void*)dlopen(\"#{agent}\", 2)")
  end
  rows[:gdb_gap] << target.read[0]
  target.stop
end

puts format("ruby %s, %d rounds, medians", `#{options[:ruby]} -e 'print RUBY_VERSION'`, options[:rounds])
puts "| measure | memprof attach | gdb -p -batch call dlopen |"
puts "|---|---|---|"
puts format("| target's largest gap (pause), ms | %.1f (baseline %.1f) | %s |",
            median(rows[:attach_gap]), median(rows[:baseline_gap]),
            rows[:gdb_gap].empty? ? "-" : format("%.1f", median(rows[:gdb_gap])))
puts format("| command wall time, ms | %.0f | %s |", median(rows[:attach_wall]),
            rows[:gdb_wall].empty? ? "-" : format("%.0f", median(rows[:gdb_wall])))
puts format("| attach returned -> first stats, ms | %.0f | - |", median(rows[:first_data]))
puts format("| allocation loop while attached | %.2fx | - |", median(rows[:overhead_attached]))
puts format("| allocation loop after detach | %.2fx | - |", median(rows[:overhead_detached]))
