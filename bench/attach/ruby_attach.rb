# frozen_string_literal: true

# What `memprof attach` costs a running Ruby process, measured inside it, next to gdb's way of
# loading a library (how heaptrack and memray attach):
#   pause        the target's largest gap between two iterations of its allocation loop while
#                the tool loads (baseline: the same window with nothing happening)
#   first data   from `memprof attach` returning to the first `memprof stats` reply
#   overhead     the loop's iterations per second before attach / attached / after detach
#
#   ruby bench/attach/ruby_attach.rb [--memprof build/memprof] [--rounds 5] [--ruby RUBY]
#                                    [--workload alloc|rails]
# The workloads: alloc, a loop making an Array of 8 Strings; rails, the bench Rails app
# (bench/ruby/rails_app, needs Debian's rails) serving its request mix, one request per iteration.
# A benchmark, not a test: numbers depend on the machine's load. Needs gdb for its column.
require "optparse"
require "open3"
require "rbconfig"

options = { memprof: File.expand_path("../../build/memprof", __dir__), rounds: 5,
            ruby: RbConfig.ruby, workload: "alloc" }
OptionParser.new do |o|
  o.on("--memprof PATH") { |v| options[:memprof] = v }
  o.on("--rounds N", Integer) { |v| options[:rounds] = v }
  o.on("--ruby PATH") { |v| options[:ruby] = v }
  o.on("--workload NAME", %w[alloc rails]) { |v| options[:workload] = v }
end.parse!
agent = File.join(File.dirname(options[:memprof]), "libmemprof_agent.so")

# The target: a loop of the workload that, on each line read from stdin, prints and resets its
# largest gap between iterations (ms) and its iterations per second since the last line.
WORKLOADS = {
  "alloc" => { setup: "", iteration: "a = Array.new(8) { |i| \"x\#{i}\" }", gap_every: 256 },
  "rails" => { setup: "require #{File.expand_path('../ruby/workloads/rails_requests', __dir__).dump}\n" \
                      "RailsRequests.prepare(1.0)",
               iteration: "RailsRequests.serve(1)", gap_every: 1 }
}.freeze

def target_program(workload)
  <<~RUBY
    $stdout.sync = true
    #{workload[:setup]}
    gap = 0.0; n = 0; t0 = last = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    Thread.new do
      while $stdin.gets
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        puts format("%.3f %.0f", gap * 1000, n / (now - t0))
        gap = 0.0; n = 0; t0 = now
      end
      exit!(0)
    end
    puts "ready"
    loop do
      #{workload[:iteration]}
      n += 1
      if (n % #{workload[:gap_every]}).zero?
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        gap = now - last if now - last > gap
        last = now
      end
    end
  RUBY
end

class Target
  def initialize(ruby, program)
    @in, @out, @wait = Open3.popen2(ruby, "-e", program)
    raise "the target did not start" unless @out.gets == "ready\n"

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

program = target_program(WORKLOADS.fetch(options[:workload]))
# Long enough for a rate over many Rails requests.
window = options[:workload] == "rails" ? 5 : 2
rows = Hash.new { |h, k| h[k] = [] }
options[:rounds].times do
  target = Target.new(options[:ruby], program)
  sleep 1
  rows[:baseline_gap] << target.read[0]
  sleep window
  _, rate_before = target.read
  rows[:attach_wall] << time_ms { run!(options[:memprof], "attach", "-p", target.pid.to_s) }
  rows[:first_data] << time_ms { run!(options[:memprof], "stats", "-p", target.pid.to_s, "--top", "1") }
  rows[:attach_gap] << target.read[0]
  sleep window
  _, rate_attached = target.read
  run!(options[:memprof], "detach", "-p", target.pid.to_s)
  target.read
  sleep window
  _, rate_after = target.read
  rows[:overhead_attached] << rate_before / rate_attached
  rows[:overhead_detached] << rate_before / rate_after
  target.stop

  next unless system("which gdb > /dev/null")

  target = Target.new(options[:ruby], program)
  sleep 1
  target.read
  # gdb's call can hang (seen on the Rails target: gdb stopped it for good); a round that does
  # is counted, not waited for.
  status = nil
  wall = time_ms do
    _, status = Open3.capture2e("timeout", "60", "gdb", "-p", target.pid.to_s, "-batch", "-nx",
                                "-ex", "call (void*)dlopen(\"#{agent}\", 2)")
  end
  if status.success?
    rows[:gdb_wall] << wall
    rows[:gdb_gap] << target.read[0]
  else
    rows[:gdb_failed] << status.exitstatus
  end
  Process.kill(:KILL, target.pid)
  target.stop
end

puts format("ruby %s, workload %s, %d rounds, medians", `#{options[:ruby]} -e 'print RUBY_VERSION'`,
            options[:workload], options[:rounds])
puts "| measure | memprof attach | gdb -p -batch call dlopen |"
puts "|---|---|---|"
puts format("| target's largest gap (pause), ms | %.1f (baseline %.1f) | %s |",
            median(rows[:attach_gap]), median(rows[:baseline_gap]),
            rows[:gdb_gap].empty? ? "-" : format("%.1f", median(rows[:gdb_gap])))
puts format("| command wall time, ms | %.0f | %s%s |", median(rows[:attach_wall]),
            rows[:gdb_wall].empty? ? "-" : format("%.0f", median(rows[:gdb_wall])),
            rows[:gdb_failed].empty? ? "" : " (#{rows[:gdb_failed].size} rounds hung > 60 s)")
puts format("| attach returned -> first stats, ms | %.0f | - |", median(rows[:first_data]))
puts format("| %s while attached | %.2fx | - |", options[:workload], median(rows[:overhead_attached]))
puts format("| %s after detach | %.2fx | - |", options[:workload], median(rows[:overhead_detached]))
