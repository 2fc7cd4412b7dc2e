# frozen_string_literal: true

# What `memprof trace` costs per traced call, next to ltrace, uftrace and bpftrace, all on one
# program (trace_bench_target: CALLS calls of bench_work in libtrace_bench.so through the PLT,
# the loop timed inside the program with CLOCK_MONOTONIC):
#   launch rows  each tool starts the target; loop time, ns per call, overhead per call over the
#                untraced loop, ratio, and the calls the tool saw (a tool that traced nothing
#                or dropped calls is not compared silently: its count is checked against CALLS)
#   attach rows  the target runs chunks of CALLS calls forever; ns per call before
#                `memprof trace -p PID -c --duration 3s`, while it traces, and after it detached
#                (the goal: an untraced process pays nothing once detached)
#
#   ruby bench/trace/run.rb [--build DIR] [--memprof PATH] [--calls N] [--rounds R]
# DIR is a build tree holding bench/trace/ (default build/); PATH defaults to DIR/memprof.
# Needs ltrace, uftrace and bpftrace (scripts/install-deps) for their rows; a tool that is
# missing, or bpftrace when the kernel refuses uprobes, gets a line saying why instead.
# A benchmark, not a test: numbers depend on the machine's load. Rounds run the tools in turn,
# so a change in load falls on every tool alike; the table shows medians.
require "optparse"
require "tmpdir"

options = { build: File.expand_path("../../build", __dir__), memprof: nil, calls: 200_000,
            rounds: 3, timeout: 300 }
OptionParser.new do |o|
  o.on("--build DIR") { |v| options[:build] = File.expand_path(v) }
  o.on("--memprof PATH") { |v| options[:memprof] = File.expand_path(v) }
  o.on("--calls N", Integer) { |v| options[:calls] = v }
  o.on("--rounds N", Integer) { |v| options[:rounds] = v }
  # ltrace stops the process twice per call (~150-200 us here): 200,000 calls take 30-60 s.
  o.on("--timeout SECONDS", Integer) { |v| options[:timeout] = v }
end.parse!
memprof = options[:memprof] || File.join(options[:build], "memprof")
target = File.join(options[:build], "bench/trace/trace_bench_target")
library = File.join(options[:build], "bench/trace/libtrace_bench.so")
calls = options[:calls]
[memprof, target, library].each { |f| abort "run.rb: #{f} is missing (build it first)" unless File.exist?(f) }

# The prototype memprof and ltrace read: the tag is a string, so each call copies it.
PROTOS = "int bench_work(int, string);\n"
# One traced call as memprof -ttT, ltrace -ttT and uftrace replay print it, string included
# (uftrace shows integers from 100,000 on in hex).
CALL_LINE = /bench_work\((?:\d+|0x\h+), "(?:alpha|bravo|charlie|delta)"\)/

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def median(values) = values.sort[values.size / 2]

def fmt_int(n) = n.to_s.reverse.scan(/\d{1,3}/).join(",").reverse

def tool?(name) = system("which #{name} > /dev/null 2>&1")

def count_lines(file) = File.foreach(file).count { |l| l.match?(CALL_LINE) }

# The calls column of bench_work's row in an ltrace -c table (memprof prints the same table).
def count_table(text) = text[/^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+bench_work$/, 1]&.to_i

# Runs command with stdout and stderr to files (never a pipe: a tracer that dies of SIGPIPE can
# leave its target hooked), at most timeout seconds. The command starts in a process group of
# its own, so a run that overstays is ended with everything it started -- the traced target
# too -- by that group's id, and nothing else on the machine is touched.
def run_bounded(command, dir, timeout, **spawn_options)
  out = File.join(dir, "stdout")
  err = File.join(dir, "stderr")
  pid = Process.spawn(*command, out: out, err: err, in: File::NULL, pgroup: true, **spawn_options)
  status = wait_bounded(pid, timeout, -pid)
  { status: status, timed_out: status.nil?, stdout: File.read(out), stderr: File.read(err) }
end

# Waits for pid at most timeout seconds; past that, sends SIGKILL to kill_id (pid, or -pid for
# its process group), reaps pid and returns nil.
def wait_bounded(pid, timeout, kill_id = pid)
  deadline = now + timeout
  loop do
    _, status = Process.wait2(pid, Process::WNOHANG)
    return status if status

    if now > deadline
      Process.kill(:KILL, kill_id)
      Process.wait(pid)
      return nil
    end
    sleep 0.02
  end
end

# A tool's row: its command (given a scratch directory), how to read the calls it saw from its
# output ({calls:, note:}), and whether it can run here.
Tool = Struct.new(:name, :label, :command, :seen, :available, keyword_init: true)

bpftrace_program = <<~BT.gsub(/\s+/, " ").strip
  uprobe:#{library}:bench_work { @start[tid] = nsecs; }
  uretprobe:#{library}:bench_work /@start[tid]/ {
    @calls = count(); @ns = sum(nsecs - @start[tid]); delete(@start[tid]); }
BT


tools = [
  Tool.new(name: "untraced", label: "untraced",
           command: ->(_d) { [target, calls.to_s] }, seen: ->(_d, _r) { { calls: nil } }),
  Tool.new(name: "memprof -c", label: "memprof trace -c (counts)",
           command: ->(_d) { [memprof, "trace", "-c", "-x", "bench_work", "--", target, calls.to_s] },
           seen: ->(_d, r) { { calls: count_table(r[:stderr]) } }),  # a launched command: on stderr
  # -ttT with the prototype: a line per call with the string copied, timestamps and durations.
  # The CLI reads the agent's ring while the target runs; what it cannot keep up with is counted
  # ("N calls were counted but not shown") and reported here, not hidden.
  Tool.new(name: "memprof -ttT", label: "memprof trace -ttT -F protos (lines, string, to a file)",
           command: lambda { |d|
             [memprof, "trace", "-ttT", "-F", File.join(d, "protos.conf"), "-x", "bench_work",
              "-o", File.join(d, "trace.out"), "--", target, calls.to_s]
           },
           seen: lambda { |d, r|
             dropped = r[:stderr][/(\d+) calls were counted but not shown/, 1]
             { calls: count_lines(File.join(d, "trace.out")),
               note: dropped && "#{fmt_int(dropped)} counted, not shown" }
           }),
  # ltrace traces the PLT calls of the executable by default: -e picks bench_work's.
  Tool.new(name: "ltrace -c", label: "ltrace -c",
           command: ->(d) { ["ltrace", "-c", "-e", "bench_work", "-o", File.join(d, "ltrace.out"), target, calls.to_s] },
           seen: ->(d, _r) { { calls: count_table(File.read(File.join(d, "ltrace.out"))) } },
           available: tool?("ltrace")),
  Tool.new(name: "ltrace -ttT", label: "ltrace -ttT -F protos (lines, string, to a file)",
           command: lambda { |d|
             ["ltrace", "-ttT", "-F", File.join(d, "protos.conf"), "-e", "bench_work",
              "-o", File.join(d, "ltrace.out"), target, calls.to_s]
           },
           seen: ->(d, _r) { { calls: count_lines(File.join(d, "ltrace.out")) } },
           available: tool?("ltrace")),
  # The target is not built with -pg: --force makes uftrace record its PLT calls (libmcount
  # hooks the executable's PLT), which is the form that sees bench_work. The count is read back
  # from the record, not assumed.
  Tool.new(name: "uftrace", label: "uftrace record --force",
           command: ->(d) { ["uftrace", "record", "--force", "-d", File.join(d, "uftrace.data"), target, calls.to_s] },
           seen: lambda { |d, _r|
             report = IO.popen(["uftrace", "report", "-d", File.join(d, "uftrace.data")], err: File::NULL, &:read)
             { calls: report[/^\s*\S+ \S+\s+\S+ \S+\s+(\d+)\s+bench_work$/, 1]&.to_i }
           },
           available: tool?("uftrace")),
  # The same with the arguments (the string copied) and the return value, as memprof -ttT -F.
  Tool.new(name: "uftrace -A", label: "uftrace record --force -A args/s -R retval",
           command: lambda { |d|
             ["uftrace", "record", "--force", "-A", "bench_work@arg1,arg2/s", "-R", "bench_work@retval",
              "-d", File.join(d, "uftrace.data"), target, calls.to_s]
           },
           seen: lambda { |d, _r|
             replay = File.join(d, "replay.out")
             system("uftrace", "replay", "-d", File.join(d, "uftrace.data"), out: replay, err: File::NULL)
             { calls: count_lines(replay) }
           },
           available: tool?("uftrace")),
  # -c starts the target held until the probes are attached, so every call is under them.
  Tool.new(name: "bpftrace", label: "bpftrace uprobe+uretprobe (count, sum ns)",
           command: ->(_d) { ["bpftrace", "-e", bpftrace_program, "-c", "#{target} #{calls}"] },
           seen: ->(_d, r) { { calls: r[:stdout][/^@calls: (\d+)$/, 1]&.to_i } },
           available: tool?("bpftrace"))
]

unavailable = {}
tools.each { |t| unavailable[t.name] = "#{t.name.split.first} is not installed" if t.available == false }

# Whether bpftrace can attach a uprobe in this kernel/container, asked once on a short run.
if tools.any? { |t| t.name == "bpftrace" && !unavailable["bpftrace"] }
  Dir.mktmpdir("trace-bench") do |dir|
    r = run_bounded(["bpftrace", "-e", "uprobe:#{library}:bench_work { @calls = count(); }", "-c", "#{target} 1000"],
                    dir, 60)
    unless !r[:timed_out] && r[:status].success? && r[:stdout].include?("@calls: 1000")
      reason = r[:timed_out] ? "timed out" : r[:stderr].lines.grep(/ERROR|rror/).first || r[:stderr].lines.last
      unavailable["bpftrace"] = (reason || "no output").strip
    end
  end
end

results = Hash.new { |h, k| h[k] = { loop_ns: [], seen: [], notes: [], commands: nil, failures: [] } }
options[:rounds].times do |round|
  tools.each do |tool|
    next if unavailable[tool.name]

    Dir.mktmpdir("trace-bench") do |dir|
      File.write(File.join(dir, "protos.conf"), PROTOS)
      command = tool.command.(dir)
      $stderr.puts "round #{round + 1}: #{tool.name}"
      r = run_bounded(command, dir, options[:timeout])
      row = results[tool.name]
      row[:commands] ||= command.map { |a| a.sub(dir, "$TMP") }
      loop_ns = r[:stdout][/^loop_ns (\d+)$/, 1]
      if r[:timed_out] || !r[:status].success? || loop_ns.nil?
        why = r[:timed_out] ? "over #{options[:timeout]} s" : "exit #{r[:status].exitstatus}: #{r[:stderr].lines.last&.strip}"
        row[:failures] << why
        next
      end
      row[:loop_ns] << loop_ns.to_i
      seen = tool.seen.(dir, r)
      row[:seen] << seen[:calls]
      row[:notes] << seen[:note] if seen[:note]
    end
  end
end

# The attach rows: chunks of CALLS calls forever, a line per chunk; each line is stamped when it
# arrives, and a chunk is put in a phase only when it ran wholly inside it (its start is its
# arrival minus its own duration).
def attach_round(memprof, target, calls, trace_seconds)
  reader, writer = IO.pipe
  pid = Process.spawn(target, "--forever", calls.to_s, out: writer, in: File::NULL)
  writer.close
  chunks = []
  raise "the target did not start" unless reader.gets == "ready\n"

  collector = Thread.new do
    while (line = reader.gets)
      ns = line[/^chunk_per_call_ns ([\d.]+)$/, 1] or next
      arrived = now
      chunks << [arrived - ns.to_f * calls / 1e9, arrived, ns.to_f]
    end
  end
  sleep 2
  Dir.mktmpdir("trace-bench") do |dir|
    t_start = now
    trace_pid = Process.spawn(memprof, "trace", "-p", pid.to_s, "-c", "-x", "bench_work",
                              "--duration", "#{trace_seconds}s",
                              out: File.join(dir, "stdout"), err: File.join(dir, "stderr"))
    # memprof says "tracing N functions" once its hooks are in; the wait is bounded by hand.
    t_traced = nil
    until t_traced || now > t_start + 60
      t_traced = now if File.read(File.join(dir, "stderr")).include?("tracing ")
      sleep 0.01
    end
    status = wait_bounded(trace_pid, trace_seconds + 60)
    t_end = now
    sleep 2
    Process.kill(:KILL, pid)
    Process.wait(pid)
    pid = nil
    collector.join
    raise "memprof trace -p failed: #{File.read(File.join(dir, 'stderr'))}" unless status&.success? && t_traced

    phase = lambda do |from, to|
      values = chunks.select { |start, finish, _| start >= from && finish <= to }.map(&:last)
      values.empty? ? nil : median(values)
    end
    { before: phase.(0, t_start), during: phase.(t_traced, t_end), after: phase.(t_end, Float::INFINITY),
      attach_ms: (t_traced - t_start) * 1000, counted: count_table(File.read(File.join(dir, "stdout"))) }
  end
ensure
  # The target runs until killed: on any failure above, it is ended here, by its pid.
  if pid
    Process.kill(:KILL, pid)
    Process.wait(pid)
  end
  reader&.close
end

attach = Hash.new { |h, k| h[k] = [] }
trace_seconds = 3
options[:rounds].times do |round|
  $stderr.puts "round #{round + 1}: memprof trace -p (attach)"
  attach_round(memprof, target, calls, trace_seconds).each { |k, v| attach[k] << v }
end

# The table's form of a command: file names without their directories, bpftrace's program as
# PROGRAM (the list under the table has every command whole).
short_command = lambda do |command|
  command.map do |a|
    a = a.sub(/\A'?uprobe:.*/m, "PROGRAM").gsub(%r{(?:\$TMP|/\S*)/([\w.-]+)}, '\\1')
    a.match?(/\s/) ? "'#{a}'" : a
  end.join(" ")
end

untraced_ns = median(results["untraced"][:loop_ns]).to_f / calls
puts format("trace_bench_target, %s calls of bench_work per run, medians of %d round%s; kernel %s",
            fmt_int(calls), options[:rounds], options[:rounds] == 1 ? "" : "s", `uname -r`.strip)
puts
puts "| tool | command | loop time | ns per call | overhead per call vs untraced (ns) | ratio | calls seen |"
puts "|---|---|---|---|---|---|---|"
tools.each do |tool|
  row = results[tool.name]
  next if row[:loop_ns].empty?

  loop_ns = median(row[:loop_ns])
  per_call = loop_ns.to_f / calls
  seen = row[:seen].compact
  seen_text = if tool.name == "untraced" then "-"
              elsif seen.size < row[:seen].size then "not found in the output"
              elsif seen.uniq == [calls] then "#{fmt_int(calls)} (all)"
              else "#{seen.map { |s| fmt_int(s) }.join(' / ')} of #{fmt_int(calls)}" \
                   "#{row[:notes].empty? ? '' : " (#{row[:notes].join(' / ')})"}"
              end
  loop_text = if loop_ns >= 1e9 then format("%.2f s", loop_ns / 1e9)
              elsif loop_ns >= 1e6 then format("%.1f ms", loop_ns / 1e6)
              else format("%.0f us", loop_ns / 1e3)
              end
  puts format("| %s | `%s` | %s | %.1f | %s | %s | %s |", tool.label, short_command.(row[:commands]), loop_text, per_call,
              tool.name == "untraced" ? "-" : format("%.1f", per_call - untraced_ns),
              tool.name == "untraced" ? "1" : format("%.0fx", per_call / untraced_ns), seen_text)
end
unless attach[:before].empty?
  b, d, a = %i[before during after].map { |k| attach[k].compact.empty? ? nil : median(attach[k].compact) }
  f = ->(v) { v ? format("%.1f", v) : "-" }
  puts format("| memprof trace -p -c (attach to the running loop for %d s) | `memprof trace -p PID -c -x bench_work --duration 3s` | - | before %s / during %s / after detach %s " \
              "| %s during, %s after | %s during | %s counted in %d s |",
              trace_seconds, f.(b), f.(d), f.(a), d && b ? format("%.1f", d - b) : "-",
              a && b ? format("%+.1f", a - b) : "-", d && b ? format("%.0fx", d / b) : "-",
              attach[:counted].compact.map { |c| fmt_int(c) }.join(" / "), trace_seconds)
  puts
  puts format("attach: `memprof trace -p` took %.0f ms (median) from its start to its \"tracing\" line.",
              median(attach[:attach_ms]))
end
puts
unavailable.each { |name, why| puts "#{name}: not available here: #{why}" }
results.each do |name, row|
  row[:failures].each { |why| puts "#{name}: a round failed: #{why}" }
end
puts
puts "Commands ($TMP: a scratch directory per run; protos.conf holds `#{PROTOS.strip}`):"
tools.each do |tool|
  next unless (command = results[tool.name][:commands])

  puts "- #{tool.name}: `#{command.map { |a| a.match?(%r{\A[\w@./,$=+:-]+\z}) ? a : "'#{a}'" }.join(' ')}`"
end
puts "- attach: `#{target} --forever #{calls}`, then `#{memprof} trace -p PID -c -x bench_work " \
     "--duration #{trace_seconds}s`"
