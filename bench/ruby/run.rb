# frozen_string_literal: true

# The Ruby overhead benchmark: every workload under every profiler, side by side in one run,
# each measurement in a fresh process, repetitions interleaved so that a busy moment of the
# machine hits all columns alike. Prints a Markdown table (medians, ratio to plain Ruby) and
# memprof's memory per live tracked object.
#
#   ruby bench/ruby/run.rb [--reps N] [--slow-reps N] [--scale F] [--workloads a,b]
#                          [--profilers p,q] [--clock cpu|wall] [--json FILE]
require "etc"
require "json"
require "open3"
require "optparse"
require "rbconfig"
require_relative "profilers"
require_relative "workloads/rails_requests" # constants only: Rails boots in prepare

module RubyBench
  ROOT = File.expand_path("../..", __dir__)
  HERE = __dir__
  WORKLOADS = %w[alloc rails].freeze
  WORKLOAD_TITLES = { "alloc" => "(a)", "rails" => "(b)" }.freeze
  # memory_profiler takes minutes per run on the full workloads; its ratio is far from the
  # others, so fewer repetitions do not change the picture.
  SLOW_PROFILERS = %w[memory_profiler].freeze
  OBJECT_COST_COUNT = 1_000_000

  Options = Struct.new(:reps, :slow_reps, :scale, :workloads, :profilers, :json, :object_cost,
                       :clock)
  CLOCKS = { "cpu" => "cpu_seconds", "wall" => "seconds" }.freeze

  def self.parse_options(argv)
    options = Options.new(5, 3, 1.0, WORKLOADS.dup, Profilers::DEFAULT.dup, nil, true, "cpu")
    OptionParser.new do |o|
      o.banner = "usage: ruby bench/ruby/run.rb [options]"
      o.on("--reps N", Integer, "repetitions per cell (default 5)") { |v| options.reps = v }
      o.on("--slow-reps N", Integer, "repetitions for memory_profiler (default 3)") do |v|
        options.slow_reps = v
      end
      o.on("--scale F", Float, "workload size factor (default 1.0)") { |v| options.scale = v }
      o.on("--workloads LIST", Array, "of #{WORKLOADS.join(',')}") { |v| options.workloads = v }
      o.on("--profilers LIST", Array, "of #{Profilers::ALL.map(&:name).join(',')} " \
                                      "(default: all but memprof_tracepoint)") do |v|
        options.profilers = v
      end
      o.on("--clock CLOCK", CLOCKS.keys, "time shown: cpu (process CPU time, default) or wall") do |v|
        options.clock = v
      end
      o.on("--json FILE", "also write every measurement (both clocks) to FILE") { |v| options.json = v }
      o.on("--[no-]object-cost", "measure memprof bytes per live object (default on)") do |v|
        options.object_cost = v
      end
    end.parse!(argv)
    validate(options)
    options
  end

  def self.validate(options)
    raise OptionParser::InvalidArgument, "--reps must be at least 1" if options.reps < 1
    raise OptionParser::InvalidArgument, "--slow-reps must be at least 1" if options.slow_reps < 1
    raise OptionParser::InvalidArgument, "--scale must be positive" unless options.scale.positive?

    unknown = options.workloads - WORKLOADS
    raise OptionParser::InvalidArgument, "unknown workload #{unknown.first}" if unknown.any?

    options.profilers.each { |name| Profilers.find(name) }
    # Plain Ruby is the baseline of every ratio; the columns keep one order whatever the list.
    options.profilers = (["plain"] | options.profilers).sort_by do |name|
      Profilers::ALL.index(Profilers.find(name))
    end
  end

  # Runs a script of this directory with the checkout's lib/ first on the load path, so that
  # `require "memprof"` loads the gem built from this tree (for a Ruby of the test matrix, with
  # MEMPROF_EXT_DIR naming the extension built for it: build/rubies/NAME). Returns [parsed JSON
  # line, nil] or [nil, error text] (the first line of the child's stderr: Ruby's message for
  # what failed).
  def self.run_child(script, *args)
    load_path = [ENV["MEMPROF_EXT_DIR"], File.join(ROOT, "lib")].compact.flat_map { |dir| ["-I", dir] }
    cmd = [RbConfig.ruby, *load_path, File.join(HERE, script), *args.map(&:to_s)]
    out, err, status = Open3.capture3(*cmd)
    return [JSON.parse(out.lines.last), nil] if status.success? && !out.empty?

    [nil, (err.empty? ? "exited with #{status.exitstatus}, no output" : err.lines.first.strip)]
  end

  def self.median(values)
    sorted = values.sort
    mid = sorted.size / 2
    sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
  end

  # Runs the whole matrix; returns {[workload, profiler] => {samples: [child's JSON, ...],
  # error:, description:}}.
  def self.measure(options)
    cells = Hash.new { |h, k| h[k] = { samples: [], error: nil, description: nil } }
    options.reps.times do |rep|
      options.workloads.each do |workload|
        # Rotating the order gives every profiler its turn at running first.
        options.profilers.rotate(rep).each do |profiler|
          cell = cells[[workload, profiler]]
          next if cell[:error]
          next if SLOW_PROFILERS.include?(profiler) && rep >= options.slow_reps

          warn format("run %d/%d  %-6s %-16s", rep + 1, options.reps, workload, profiler)
          result, error = run_child("child.rb", workload, profiler, options.scale)
          if error
            cell[:error] = error
            warn "  failed: #{error}"
          else
            cell[:samples] << result
            cell[:description] = result.fetch("description")
            warn format("  %.3f s wall, %.3f s CPU", result.fetch("seconds"), result.fetch("cpu_seconds"))
          end
        end
      end
    end
    cells
  end

  # memprof's resident growth minus plain Ruby's, per live tracked object, and what memprof
  # says its tables take per entry (Memprof.info); medians over the repetitions.
  def self.object_cost(options)
    samples = Array.new(options.reps) do
      plain, error = run_child("object_cost.rb", "plain", OBJECT_COST_COUNT)
      return { error: error } if error

      tracked, error = run_child("object_cost.rb", "memprof", OBJECT_COST_COUNT)
      return { error: error } if error
      return { error: "memprof tracked no live objects" } unless tracked["live_tracked"].positive?

      [(tracked["resident_growth"] - plain["resident_growth"]).fdiv(tracked["live_tracked"]),
       (tracked["table_bytes"] + tracked["site_bytes"]).fdiv(tracked["entries"])]
    end
    { resident: median(samples.map(&:first)), own: median(samples.map(&:last)), live: OBJECT_COST_COUNT }
  end

  def self.machine
    cpu = File.foreach("/proc/cpuinfo").find { |l| l.start_with?("model name") }
    cpu = cpu ? cpu.split(":", 2).last.strip : "unknown CPU"
    kernel = File.read("/proc/sys/kernel/osrelease").strip
    "#{cpu}, nproc #{Etc.nprocessors}, Linux #{kernel}, #{RUBY_DESCRIPTION}"
  end

  def self.cell_median(cell, clock)
    return nil if cell[:error] || cell[:samples].empty?

    median(cell[:samples].map { |sample| sample.fetch(CLOCKS.fetch(clock)) })
  end

  def self.format_cell(cell, seconds, plain_median)
    return "failed" if cell[:error]
    return "—" if seconds.nil?
    return format("%.2f s", seconds) if plain_median.nil?

    format("%.2f s (**%.2fx**)", seconds, seconds / plain_median)
  end

  def self.table(options, cells, cost)
    labels = options.profilers.map { |name| Profilers.find(name).label }
    lines = []
    lines << "| workload | #{labels.join(' | ')} |"
    lines << "|---|#{'---|' * labels.size}"
    options.workloads.each do |workload|
      plain = cells[[workload, "plain"]]
      plain_median = cell_median(plain, options.clock)
      row = options.profilers.map do |profiler|
        cell = cells[[workload, profiler]]
        format_cell(cell, cell_median(cell, options.clock), profiler == "plain" ? nil : plain_median)
      end
      description = plain[:description] || workload
      lines << "| #{WORKLOAD_TITLES.fetch(workload)} #{description} | #{row.join(' | ')} |"
    end
    lines << ""
    slow = (options.profilers & SLOW_PROFILERS).map { |p| "#{p}: #{[options.slow_reps, options.reps].min}" }
    clock = options.clock == "cpu" ? "CPU time of the process (user + system, all threads)" : "wall time"
    lines << "Median of #{options.reps} runs#{slow.empty? ? '' : " (#{slow.join(', ')})"}, each in a " \
             "fresh process; #{clock} of the profiled block only (Ruby start, Rails boot and " \
             "#{RailsRequests::WARMUP_REQUESTS} warm-up requests excluded); ratio to plain Ruby in bold."
    if cost
      lines << ""
      lines << if cost[:error]
                 "memprof memory per live tracked object: not measured (#{cost[:error]})"
               else
                 format("memprof memory per live tracked object: **%.1f bytes** (resident-set growth " \
                        "with memprof minus without, %d live objects; memprof's own count, " \
                        "Memprof.info table_bytes + site_bytes per entry: %.1f bytes; median of %d).",
                        cost[:resident], cost[:live], cost[:own], options.reps)
               end
    end
    lines << ""
    lines << "Machine: #{machine}."
    lines.join("\n")
  end

  def self.main(argv)
    options = parse_options(argv)
    cells = measure(options)
    cost = object_cost(options) if options.object_cost && options.profilers.include?("memprof")
    puts table(options, cells, cost)
    if options.json
      File.write(options.json, JSON.pretty_generate(
        cells.map { |(w, p), c| { workload: w, profiler: p, **c } }
      ))
    end
    failures = cells.select { |_, c| c[:error] }
    failures.each { |(w, p), c| warn "#{w}/#{p} failed: #{c[:error]}" }
    failures.empty? && !cost&.key?(:error)
  rescue OptionParser::ParseError => e
    warn "run.rb: #{e.message}"
    false
  end
end

exit(RubyBench.main(ARGV) ? 0 : 1) if $PROGRAM_NAME == __FILE__
