# frozen_string_literal: true

# memprof's native-memory tracker (`memprof native -- CMD`) next to heaptrack (`heaptrack CMD`,
# the tool users pick instead), both in launch mode, each measurement in a fresh process,
# repetitions interleaved (and the tools' order rotated) so that a busy moment of the machine
# hits every column alike. Prints Markdown tables of medians:
#
#   1. the workload's own time, measured inside the process, so the tools' start-up and their
#      work at exit are left out: the Ruby workloads of bench/ruby (bench/ruby/child.rb with the
#      "plain" profiler: the timed block after boot and warm-up, under Debian's /usr/bin/ruby)
#      and native_malloc_pairs (bench/native/malloc_pairs.c: ns per malloc+free pair, ns per
#      malloc of a block kept live), with the ratio to the untracked run and the allocations
#      each tool saw (memprof: --json totals.allocations; heaptrack: heaptrack_print's "calls to
#      allocation functions"; checked against the count the C program makes);
#   2. the whole run, from spawn to exit (tool start-up, Ruby start and Rails boot, the tool's
#      work at exit included), wall time or the CPU time of every process of the run (the
#      tool's own processes included: heaptrack_interpret and zstd, the memprof CLI), and
#      heaptrack_print's analysis time, which is not counted in the run;
#   3. memory per live allocation, with LIVE blocks (default 1,000,000) kept until exit:
#      the tracked process's peak resident set (VmHWM, read by the program itself) minus the
#      untracked one's; memprof's own count (--json totals.engine_bytes / totals.live_blocks);
#      the tool's other processes (sampled VmHWM of heaptrack_interpret + zstd, of the memprof
#      CLI), per live block as the growth over a run with no block kept.
#
#   ruby bench/native/run.rb [--reps N] [--workloads alloc,rails,pairs,live]
#                            [--tools memprof,heaptrack] [--clock wall|cpu] [--json FILE]
#                            [--scale F] [--pairs N] [--live N] [--build DIR] [--ruby PATH]
# A benchmark, not a test: the numbers depend on the machine's load.
require "etc"
require "json"
require "optparse"
require "tmpdir"

module NativeBench
  ROOT = File.expand_path("../..", __dir__)
  CHILD = File.join(ROOT, "bench/ruby/child.rb")
  WORKLOADS = %w[alloc rails pairs live].freeze
  TOOLS = %w[plain memprof heaptrack].freeze
  TOOL_LABELS = { "plain" => "plain", "memprof" => "memprof native", "heaptrack" => "heaptrack" }.freeze
  CLOCKS = %w[wall cpu].freeze
  # The live workload holds its blocks this long before exiting, so that heaptrack_interpret
  # (which reads heaptrack's pipe behind the program) has caught up while they are live.
  HOLD_MS = 500
  # Blocks the C program's process allocates beyond its own loop: stdio's buffer, fopen of
  # /proc/self/status, the array of kept pointers.
  C_EXTRA_ALLOCATIONS = 100

  # Commands the heaptrack script runs for a moment before the program starts (not alongside
  # it): left out of the tool's other processes.
  SHELL_HELPERS = %w[mkfifo readlink uname dirname basename chown rm sed hostname].freeze

  Options = Struct.new(:reps, :workloads, :tools, :clock, :json, :scale, :pairs, :live, :build,
                       :ruby, :timeout)

  def self.parse_options(argv)
    options = Options.new(5, WORKLOADS.dup, TOOLS.dup, "wall", nil, 1.0, 10_000_000, 1_000_000,
                          File.join(ROOT, "build"), "/usr/bin/ruby", 900)
    OptionParser.new do |o|
      o.banner = "usage: ruby bench/native/run.rb [options]"
      o.on("--reps N", Integer, "repetitions per cell (default 5)") { |v| options.reps = v }
      o.on("--workloads LIST", Array, "of #{WORKLOADS.join(',')} (default all)") { |v| options.workloads = v }
      o.on("--tools LIST", Array, "of memprof,heaptrack (plain always runs)") { |v| options.tools = v }
      o.on("--clock CLOCK", CLOCKS, "time shown: wall (default) or cpu") { |v| options.clock = v }
      o.on("--json FILE", "also write every measurement to FILE") { |v| options.json = v }
      o.on("--scale F", Float, "Ruby workload size factor (default 1.0, as bench/ruby)") { |v| options.scale = v }
      o.on("--pairs N", Integer, "malloc+free pairs of the pairs workload (default 10,000,000)") do |v|
        options.pairs = v
      end
      o.on("--live N", Integer, "blocks kept live by the live workload (default 1,000,000)") { |v| options.live = v }
      o.on("--build DIR", "build tree with memprof and bench/native (default build/)") do |v|
        options.build = File.expand_path(v)
      end
      o.on("--ruby PATH", "Ruby for the Ruby workloads (default /usr/bin/ruby)") { |v| options.ruby = v }
      o.on("--timeout SECONDS", Integer, "per run (default 900)") { |v| options.timeout = v }
    end.parse!(argv)
    validate(options)
    options
  end

  def self.validate(options)
    raise OptionParser::InvalidArgument, "--reps must be at least 1" if options.reps < 1
    raise OptionParser::InvalidArgument, "--scale must be positive" unless options.scale.positive?
    raise OptionParser::InvalidArgument, "--pairs must be at least 1" if options.pairs < 1
    raise OptionParser::InvalidArgument, "--live must be at least 1" if options.live < 1

    unknown = options.workloads - WORKLOADS
    raise OptionParser::InvalidArgument, "unknown workload #{unknown.first}" if unknown.any?

    unknown = options.tools - TOOLS
    raise OptionParser::InvalidArgument, "unknown tool #{unknown.first}" if unknown.any?

    options.tools = TOOLS & (["plain"] | options.tools)
    options.workloads = WORKLOADS & options.workloads
  end

  def self.memprof(options) = File.join(options.build, "memprof")
  def self.pairs_program(options) = File.join(options.build, "bench/native/native_malloc_pairs")

  # What must exist before anything runs; a one-line reason otherwise.
  def self.missing(options)
    if options.tools.include?("memprof") && !File.executable?(memprof(options))
      return "#{memprof(options)} is missing (cd build && cmake --build . --target memprof)"
    end
    if options.tools.include?("heaptrack")
      %w[heaptrack heaptrack_print].each do |tool|
        return "#{tool} is not installed (apt-get install heaptrack)" unless which(tool)
      end
    end
    if (options.workloads & %w[pairs live]).any? && !File.executable?(pairs_program(options))
      return "#{pairs_program(options)} is missing (cd build && cmake --build . --target native_malloc_pairs)"
    end
    if (options.workloads & %w[alloc rails]).any? && !File.executable?(options.ruby)
      return "#{options.ruby} is missing (apt-get install ruby)"
    end
    nil
  end

  def self.which(name)
    ENV.fetch("PATH", "").split(":").map { |dir| File.join(dir, name) }.find { |f| File.executable?(f) }
  end

  def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def self.median(values)
    return nil if values.empty?

    sorted = values.sort
    mid = sorted.size / 2
    sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
  end

  def self.megabytes(bytes) = bytes >= 1e6 ? format("%.1f MB", bytes / 1e6) : format("%.0f kB", bytes / 1e3)

  def self.fmt_int(n) = n.round.to_s.reverse.scan(/\d{1,3}/).join(",").reverse

  # The workload's command (plain), and what it expects.
  def self.workload_command(options, workload, live: nil)
    case workload
    when "alloc", "rails" then [options.ruby, CHILD, workload, "plain", options.scale.to_s]
    when "pairs" then [pairs_program(options), "--pairs", options.pairs.to_s, "--live", "0"]
    when "live"
      [pairs_program(options), "--pairs", "0", "--live", (live || options.live).to_s, "--hold-ms", HOLD_MS.to_s]
    end
  end

  def self.tool_command(options, tool, command, dir)
    case tool
    when "plain" then command
    when "memprof" then [memprof(options), "native", "--json", "--", *command]
    when "heaptrack" then ["heaptrack", "-o", File.join(dir, "heaptrack"), *command]
    end
  end

  # The processes of the run's process group (the tool, the program, heaptrack_interpret, ...),
  # each one's peak resident set seen so far (VmHWM, KiB), by pid: {pid => [comm, kb]}.
  def self.sample_group(pgid, peaks)
    Dir.each_child("/proc") do |entry|
      next unless entry.match?(/\A\d+\z/)

      stat = File.read("/proc/#{entry}/stat")
      close = stat.rindex(")")
      next unless stat[close + 2..].split[2].to_i == pgid

      hwm = File.read("/proc/#{entry}/status")[/^VmHWM:\s+(\d+)/, 1]
      next unless hwm

      comm = stat[stat.index("(") + 1...close]
      peaks[entry.to_i] = [comm, [hwm.to_i, peaks.dig(entry.to_i, 1) || 0].max]
    rescue Errno::ENOENT, Errno::ESRCH, Errno::EACCES
      next
    end
  end

  # Runs command in a process group of its own, stdout and stderr to files of dir, at most
  # options.timeout seconds (past that, SIGKILL to the group: everything the run started, and
  # nothing else). Returns {status:, timed_out:, stdout:, stderr:, wall:, cpu:, peaks:}: wall
  # from spawn to reaping, cpu the CPU time of every process of the run (children's user +
  # system: the tool's helpers are reaped by the tool, so their time is in it), peaks the
  # group's processes' VmHWM sampled every 20 ms when sample is set.
  def self.run(command, dir, timeout, sample: false)
    out = File.join(dir, "stdout")
    err = File.join(dir, "stderr")
    peaks = {}
    before = Process.times
    t0 = now
    pid = Process.spawn(*command, out: out, err: err, in: File::NULL, pgroup: true)
    status = nil
    loop do
      _, status = Process.wait2(pid, Process::WNOHANG)
      break if status

      if now - t0 > timeout
        Process.kill(:KILL, -pid)
        _, status = Process.wait2(pid)
        status = nil
        break
      end
      sample_group(pid, peaks) if sample
      sleep(sample ? 0.02 : 0.01)
    end
    wall = now - t0
    after = Process.times
    { status: status, timed_out: status.nil?, stdout: File.read(out), stderr: File.read(err), wall: wall,
      cpu: (after.cutime - before.cutime) + (after.cstime - before.cstime), peaks: peaks }
  end

  def self.key_values(text) = text.scan(/^([a-z_]+) ([\d.]+)$/).to_h { |k, v| [k, v.to_f] }

  # The one-line reason a run failed, or nil.
  def self.failure(result)
    return "over the timeout, killed" if result[:timed_out]
    return nil if result[:status].success?

    # The program's own message (Ruby's [BUG] line, an error) rather than the tool's last word.
    lines = result[:stderr].lines.map(&:strip).reject(&:empty?)
    why = lines.find { |l| l.match?(/\[BUG\]|error|abort|fault/i) && !l.start_with?("memprof: process") } || lines.last
    "exit #{result[:status].exitstatus || "by signal #{result[:status].termsig}"}: #{why || 'no message'}"
  end

  # Reads one run's output into a sample: the workload's own time (inner_wall, inner_cpu, in
  # seconds or ns per operation), what the tool saw, memory. Returns [sample, nil] or [nil, error].
  def self.read_sample(options, workload, tool, result, dir, baseline: false)
    sample = { wall: result[:wall], cpu: result[:cpu] }
    if %w[alloc rails].include?(workload)
      line = result[:stdout].lines.find { |l| l.start_with?('{"workload"') }
      return [nil, "the workload printed no result"] unless line

      child = JSON.parse(line)
      sample.merge!(inner_wall: child.fetch("seconds"), inner_cpu: child.fetch("cpu_seconds"),
                    description: child.fetch("description"))
    else
      values = key_values(result[:stdout])
      keys = workload == "pairs" ? %w[pair_ns pair_cpu_ns] : %w[live_ns_per_malloc live_cpu_ns_per_malloc]
      return [nil, "native_malloc_pairs printed no #{keys.first}"] unless values[keys.first] || baseline
      return [nil, "native_malloc_pairs printed no vm_hwm_kb"] unless values["vm_hwm_kb"]

      sample.merge!(inner_wall: values[keys[0]], inner_cpu: values[keys[1]], target_hwm_kb: values["vm_hwm_kb"])
      program = File.basename(pairs_program(options))[0, 15] # a comm is 15 characters at most
      others = result[:peaks].values.reject { |comm, _| comm == program || SHELL_HELPERS.include?(comm) }
      sample[:other_processes] = others.group_by(&:first).transform_values { |v| v.sum(&:last) }
      sample[:other_kb] = others.sum(&:last)
    end

    case tool
    when "memprof"
      # The report of a launched command is on stderr (older builds: stdout, after its output).
      report = (result[:stderr].lines + result[:stdout].lines).reverse.find { |l| l.start_with?('{"seconds"') }
      return [nil, "memprof printed no report"] unless report

      totals = JSON.parse(report).fetch("totals")
      sample.merge!(allocations: totals.fetch("allocations"), engine_bytes: totals.fetch("engine_bytes"),
                    live_blocks: totals.fetch("live_blocks"))
      # Newer builds also say what the live-block table alone takes, and its entries.
      if totals["block_table_bytes"] && totals["table_entries"]&.positive?
        sample[:table_bytes_per_entry] = totals["block_table_bytes"].fdiv(totals["table_entries"])
      end
    when "heaptrack"
      file = Dir.glob(File.join(dir, "heaptrack.*")).first
      return [nil, "heaptrack wrote no file"] unless file

      stats = result[:stdout][/^\s*allocations:\s+(\d+)/, 1] || result[:stderr][/^\s*allocations:\s+(\d+)/, 1]
      t0 = now
      printed = IO.popen(["heaptrack_print", file], err: File::NULL, &:read)
      sample[:analysis_seconds] = now - t0
      calls = printed[/^calls to allocation functions: (\d+)/, 1]
      return [nil, "heaptrack_print found no allocations line in #{File.basename(file)}"] unless calls

      sample.merge!(allocations: calls.to_i, stats_allocations: stats&.to_i, file_bytes: File.size(file))
    end
    [sample, nil]
  end

  # The C program's count: what it allocates itself, and up to C_EXTRA_ALLOCATIONS more.
  def self.check_c_allocations(options, workload, sample, live: nil)
    return nil unless sample[:allocations] && %w[pairs live].include?(workload)

    kept = live || options.live
    expected = workload == "pairs" ? options.pairs : kept + (kept.positive? ? 1 : 0) # + the array of them
    seen = sample[:allocations]
    return nil if seen.between?(expected, expected + C_EXTRA_ALLOCATIONS)

    "saw #{fmt_int(seen)} allocations, the program made #{fmt_int(expected)}"
  end

  # One measurement: [sample, nil] or [nil, error]. The live workload's sample carries a run
  # with no block kept (:baseline), the reference for the tool's other processes.
  def self.measure_one(options, workload, tool, live: nil)
    Dir.mktmpdir("native-bench") do |dir|
      command = tool_command(options, tool, workload_command(options, workload, live: live), dir)
      result = run(command, dir, options.timeout, sample: workload == "live")
      error = failure(result)
      return [nil, error] if error

      sample, error = read_sample(options, workload, tool, result, dir, baseline: live&.zero?)
      return [nil, error] if error

      error = check_c_allocations(options, workload, sample, live: live)
      return [nil, error] if error

      if workload == "live" && live.nil?
        baseline, error = measure_one(options, workload, tool, live: 0)
        return [nil, "the run with no live block: #{error}"] if error

        sample[:baseline] = baseline
      end
      [sample, nil]
    end
  end

  def self.measure(options)
    cells = Hash.new { |h, k| h[k] = { samples: [], error: nil } }
    tools = options.tools
    options.reps.times do |rep|
      options.workloads.each do |workload|
        tools.rotate(rep).each do |tool|
          cell = cells[[workload, tool]]
          next if cell[:error]

          warn format("run %d/%d  %-6s %-10s", rep + 1, options.reps, workload, tool)
          sample, error = measure_one(options, workload, tool)
          if error
            cell[:error] = error
            warn "  failed: #{error}"
          else
            cell[:samples] << sample
            warn format("  inner %.3f (wall) %.3f (CPU)%s; run %.2f s wall, %.2f s CPU%s", sample[:inner_wall],
                        sample[:inner_cpu], %w[pairs live].include?(workload) ? " ns" : " s", sample[:wall],
                        sample[:cpu], sample[:allocations] ? "; #{fmt_int(sample[:allocations])} allocations" : "")
          end
        end
      end
    end
    cells
  end

  def self.cell_median(cell, key)
    return nil if cell.nil? || cell[:error]

    median(cell[:samples].map { |s| s[key] }.compact)
  end

  def self.unit(workload, value)
    case workload
    when "pairs" then format("%.1f ns/pair", value)
    when "live" then format("%.0f ns/malloc", value)
    else format("%.2f s", value)
    end
  end

  def self.time_cell(cell, key, plain, workload)
    return "failed" if cell[:error]

    value = cell_median(cell, key)
    return "—" unless value
    return unit(workload, value) if plain.nil?

    format("%s (**%.2fx**)", unit(workload, value), value / plain)
  end

  def self.workload_title(options, workload, cells)
    case workload
    when "alloc", "rails"
      description = cells.values_at(*options.tools.map { |t| [workload, t] }).flat_map { |c| c[:samples] }
                         .map { |s| s[:description] }.compact.first
      "Ruby #{description || workload} (bench/ruby)"
    when "pairs" then "C: #{fmt_int(options.pairs)} malloc+free pairs, 8..256 bytes"
    when "live" then "C: #{fmt_int(options.live)} blocks kept live (malloc only)"
    end
  end

  def self.seen_cell(options, cells, workload)
    counts = (options.tools - ["plain"]).map do |tool|
      cell = cells[[workload, tool]]
      next "–" if cell[:error] || cell[:samples].empty?

      seen = cell[:samples].map { |s| s[:allocations] }
      seen.uniq.size == 1 ? fmt_int(seen.first) : "#{fmt_int(seen.min)}–#{fmt_int(seen.max)}"
    end
    counts.join(" / ")
  end

  def self.clock_key(options, inner) = inner ? :"inner_#{options.clock}" : options.clock.to_sym

  def self.time_table(options, cells)
    tools = options.tools
    lines = []
    lines << "| workload | #{tools.map { |t| TOOL_LABELS[t] }.join(' | ')} | malloc-family calls seen " \
             "(#{(tools - ['plain']).map { |t| TOOL_LABELS[t] }.join(' / ')}) |"
    lines << "|---|#{'---|' * tools.size}---|"
    options.workloads.each do |workload|
      key = clock_key(options, true)
      plain = cell_median(cells[[workload, "plain"]], key)
      row = tools.map { |t| time_cell(cells[[workload, t]], key, t == "plain" ? nil : plain, workload) }
      lines << "| #{workload_title(options, workload, cells)} | #{row.join(' | ')} | " \
               "#{seen_cell(options, cells, workload)} |"
    end
    lines
  end

  def self.whole_run_table(options, cells)
    tools = options.tools
    heaptrack = tools.include?("heaptrack")
    lines = []
    lines << "| whole run, #{options.clock == 'wall' ? 'wall' : 'CPU of all its processes'} | " \
             "#{tools.map { |t| TOOL_LABELS[t] }.join(' | ')} |#{heaptrack ? ' heaptrack_print (not counted) |' : ''}"
    lines << "|---|#{'---|' * tools.size}#{heaptrack ? '---|' : ''}"
    options.workloads.each do |workload|
      key = clock_key(options, false)
      plain = cell_median(cells[[workload, "plain"]], key)
      row = tools.map do |t|
        cell = cells[[workload, t]]
        value = cell_median(cell, key)
        next(cell[:error] ? "failed" : "—") unless value
        next format("%.2f s", value) if t == "plain" || plain.nil?

        format("%.2f s (**%.2fx**)", value, value / plain)
      end
      if heaptrack
        analysis = cell_median(cells[[workload, "heaptrack"]], :analysis_seconds)
        size = cell_median(cells[[workload, "heaptrack"]], :file_bytes)
        row << (analysis ? format("%.2f s (file: %s)", analysis, megabytes(size)) : "—")
      end
      lines << "| #{workload_title(options, workload, cells)} | #{row.join(' | ')} |"
    end
    lines
  end

  # A process name as the table shows it (a comm is cut at 15 characters).
  def self.process_name(comm)
    { "heaptrack_inter" => "heaptrack_interpret", "heaptrack" => "the heaptrack script",
      "memprof" => "the memprof CLI" }.fetch(comm, comm)
  end

  # Memory of the live workload, each tool against plain: what the tracked process and the
  # tool's other processes hold with LIVE blocks live, and per live block the growth over the
  # run with none kept (the tool's fixed costs left out), medians over the repetitions.
  def self.memory_table(options, cells)
    plain_cell = cells[["live", "plain"]]
    tools = options.tools - ["plain"]
    return [] if plain_cell[:error] || plain_cell[:samples].empty? || tools.empty?

    live = options.live
    plain = median(plain_cell[:samples].map { |s| s[:target_hwm_kb] })
    plain_growth = median(plain_cell[:samples].map { |s| s[:target_hwm_kb] - s[:baseline][:target_hwm_kb] })
    per_block = ->(kb) { format("%.1f B", kb * 1024.0 / live) }
    mb = ->(kb) { format("%.1f MB", kb / 1024.0) }
    labels = [
      "tracked process: peak RSS minus plain's, no block kept (the tool's fixed cost)",
      "tracked process: per live block (its growth with #{fmt_int(live)} blocks minus plain's growth)",
      "memprof's own count: engine_bytes / live_blocks (--json totals)",
      "memprof's own count: block_table_bytes / table_entries (--json totals)",
      "tool's other processes: peak RSS, no block kept / #{fmt_int(live)} blocks live",
      "tool's other processes: per live block (growth)",
      "**per live block, all processes** (the two growths)",
      "**extra memory with #{fmt_int(live)} blocks live, all processes** (tracked process over plain + others)"
    ]
    columns = tools.map do |tool|
      cell = cells[["live", tool]]
      next Array.new(labels.size, "failed") if cell[:error] || cell[:samples].empty?

      samples = cell[:samples]
      fixed = median(samples.map { |s| s[:baseline][:target_hwm_kb] }) - median(plain_cell[:samples].map { |s| s[:baseline][:target_hwm_kb] })
      growth = median(samples.map { |s| s[:target_hwm_kb] - s[:baseline][:target_hwm_kb] }) - plain_growth
      others = median(samples.map { |s| s[:other_kb] })
      others_none = median(samples.map { |s| s[:baseline][:other_kb] })
      others_growth = median(samples.map { |s| s[:other_kb] - s[:baseline][:other_kb] })
      names = samples.flat_map { |s| s[:other_processes].keys }.uniq
      own = tool == "memprof" ? format("%.1f B", median(samples.map { |s| s[:engine_bytes].fdiv(s[:live_blocks]) })) : "–"
      table = median(samples.map { |s| s[:table_bytes_per_entry] }.compact)
      table = table ? format("%.1f B", table) : "–"
      extra = median(samples.map { |s| s[:target_hwm_kb] + s[:other_kb] }) - plain
      [mb.(fixed), per_block.(growth), own, table,
       "#{mb.(others_none)} / #{mb.(others)} (#{names.map { |n| process_name(n) }.join(', ')})",
       per_block.(others_growth), "**#{per_block.(growth + others_growth)}**", "**#{mb.(extra)}**"]
    end
    lines = []
    lines << "| #{fmt_int(live)} blocks of 8..256 bytes live | #{tools.map { |t| TOOL_LABELS[t] }.join(' | ')} |"
    lines << "|---|#{'---|' * tools.size}"
    labels.each_with_index do |label, i|
      next if label.start_with?("memprof's own") && columns.all? { |c| ["–", "failed"].include?(c[i]) }

      lines << "| #{label} | #{columns.map { |c| c[i] }.join(' | ')} |"
    end
    lines << ""
    lines << format("Plain peak RSS of the program with the blocks live: %.1f MB (%.1f MB with none kept). " \
                    "Tracked process: VmHWM as the program reads it, its blocks still live. Other " \
                    "processes (memprof: the CLI; heaptrack: heaptrack_interpret, which keeps the table of " \
                    "live blocks, and zstd): VmHWM sampled every 20 ms, the program holding its blocks %d ms " \
                    "before exiting (a lower bound of their peak). Each tool also ran the program with no " \
                    "block kept; per live block is the growth between the two runs. memprof's live_blocks " \
                    "counts libc's own blocks too.", plain / 1024.0,
                    median(plain_cell[:samples].map { |s| s[:baseline][:target_hwm_kb] }) / 1024.0, HOLD_MS)
    lines
  end

  def self.machine(options)
    cpu = File.foreach("/proc/cpuinfo").find { |l| l.start_with?("model name") }
    cpu = cpu ? cpu.split(":", 2).last.strip : "unknown CPU"
    ruby = IO.popen([options.ruby, "-e", "print RUBY_DESCRIPTION"], err: File::NULL, &:read) rescue "?"
    heaptrack = IO.popen(%w[heaptrack --version], err: File::NULL, &:read).strip rescue "?"
    "#{cpu}, nproc #{Etc.nprocessors}, Linux #{File.read('/proc/sys/kernel/osrelease').strip}; #{ruby}; #{heaptrack}"
  end

  def self.loadavg = File.read("/proc/loadavg").split.first(3).join(" ")

  def self.report(options, cells, load_before)
    lines = time_table(options, cells)
    lines << ""
    clock = options.clock == "wall" ? "wall time" : "CPU time of the process (user + system, all threads; " \
                                                    "heaptrack_interpret's work in its own process is not in it)"
    lines << "Median of #{options.reps} runs, each in a fresh process, repetitions interleaved; #{clock} " \
             "measured inside the program: for Ruby the timed block of bench/ruby/child.rb (Ruby start, " \
             "Rails boot, warm-up, the tools' start-up and exit excluded), for C the loop of " \
             "native_malloc_pairs; ratio to plain in bold. Calls seen: memprof native --json " \
             "totals.allocations / heaptrack_print's \"calls to allocation functions\" (C rows checked " \
             "against the program's own count)."
    lines << ""
    lines.concat(whole_run_table(options, cells))
    lines << ""
    lines << "From spawn to exit: the tool's start-up, Ruby start and Rails boot under the tool, the " \
             "program, the tool's work at exit (memprof: its last read and report; heaptrack: " \
             "heaptrack_interpret and zstd finishing). heaptrack_print's analysis of the file is timed " \
             "apart and not counted."
    if options.workloads.include?("live")
      memory = memory_table(options, cells)
      unless memory.empty?
        lines << ""
        lines.concat(memory)
      end
    end
    notes = consistency_notes(options, cells)
    cells.each { |(w, t), c| notes << "#{w} under #{TOOL_LABELS[t]} failed: #{c[:error]}" if c[:error] }
    unless notes.empty?
      lines << ""
      lines.concat(notes)
    end
    lines << ""
    lines << "Machine: #{machine(options)}; load average #{load_before} before, #{loadavg} after."
    lines.join("\n")
  end

  # For the Ruby workloads there is no count to check against: the two tools are checked
  # against each other.
  def self.consistency_notes(options, cells)
    return [] unless options.tools.include?("memprof") && options.tools.include?("heaptrack")

    (options.workloads & %w[alloc rails]).filter_map do |workload|
      a = cell_median(cells[[workload, "memprof"]], :allocations)
      b = cell_median(cells[[workload, "heaptrack"]], :allocations)
      next unless a && b
      next if (a - b).abs <= 0.05 * [a, b].max

      format("Note: on %s memprof saw %s allocations and heaptrack %s (more than 5%% apart).", workload,
             fmt_int(a), fmt_int(b))
    end
  end

  def self.main(argv)
    options = parse_options(argv)
    if (why = missing(options))
      warn "run.rb: #{why}"
      return false
    end
    load_before = loadavg
    cells = measure(options)
    puts report(options, cells, load_before)
    if options.json
      File.write(options.json, JSON.pretty_generate(
        { options: options.to_h, cells: cells.map { |(w, t), c| { workload: w, tool: t, **c } } }
      ))
    end
    failures = cells.select { |_, c| c[:error] }
    failures.each { |(w, t), c| warn "#{w}/#{t} failed: #{c[:error]}" }
    failures.empty?
  rescue OptionParser::ParseError => e
    warn "run.rb: #{e.message}"
    false
  end
end

exit(NativeBench.main(ARGV) ? 0 : 1) if $PROGRAM_NAME == __FILE__
