# frozen_string_literal: true

# Memprof.dump_all against ObjectSpace.dump_all, alone and beside a thread busy on the CPU, on
# every Ruby built (the machine's and scripts/rubies'): seconds per dump and the references to
# objects the dump does not hold (what other threads made and dropped while it was written).
# Each measurement in a fresh process; prints a Markdown table of medians.
#
#   ruby bench/ruby/dump_all.rb [--reps N] [--strings N] [--build DIR]
require "json"
require "open3"
require "optparse"
require "rbconfig"
require "tmpdir"

module DumpAllBench
  ROOT = File.expand_path("../..", __dir__)

  # One dump in a fresh process: prints "SECONDS" and leaves the dump at ARGV[0].
  PROGRAM = <<~'RUBY'
    path, writer, busy, strings = ARGV
    require "objspace"
    require "memprof" if writer == "memprof"
    Memprof.start if writer == "memprof"
    $kept = Array.new(Integer(strings)) { |i| "kept string #{i}" }
    stop = false
    thread = busy == "busy" ? Thread.new do
      churn = []
      until stop
        churn << [churn.size]
        churn = [] if churn.size > 1000
      end
    end : nil
    sleep 0.2
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    if writer == "memprof"
      Memprof.dump_all(path)
    else
      File.open(path, "w") { |f| ObjectSpace.dump_all(output: f) }
    end
    puts Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    stop = true
    thread&.join
  RUBY

  def self.rubies(build)
    list = [["#{RUBY_VERSION} (system)", RbConfig.ruby, File.join(ROOT, "lib")]]
    out, status = Open3.capture2(File.join(ROOT, "scripts/rubies"), "list")
    return list unless status.success?

    out.each_line do |line|
      name, ruby = line.split
      list << [name, ruby, File.join(build, "rubies", name)] if File.directory?(File.join(build, "rubies", name))
    end
    list
  end

  def self.measure(ruby, ext_dir, writer, busy, strings, dir, cli)
    dump = File.join(dir, "heap.json")
    script = File.join(dir, "dump.rb")
    File.write(script, PROGRAM)
    out, err, status = Open3.capture3(ruby, "-I", ext_dir, "-I", File.join(ROOT, "lib"), script, dump, writer, busy, strings.to_s)
    raise "#{ruby} #{writer} #{busy}: #{err}" unless status.success?

    analysis, _warnings, = Open3.capture3(cli, "analyze", "--json", dump)
    [Float(out), JSON.parse(analysis)["problems"]["dangling_references"], File.size(dump)]
  end

  def self.run(argv)
    reps = 3
    strings = 20_000
    build = File.join(ROOT, "build")
    OptionParser.new do |o|
      o.on("--reps N", Integer, "dumps per cell (default 3)") { |v| reps = v }
      o.on("--strings N", Integer, "Strings kept, the heap's size (default 20,000: a ~12 MB dump)") { |v| strings = v }
      o.on("--build DIR", "the build directory (default build)") { |v| build = v }
    end.parse!(argv)
    cli = File.join(build, "memprof")
    puts "| Ruby | dump | ObjectSpace.dump_all, alone | Memprof.dump_all, alone | ObjectSpace.dump_all, busy thread | Memprof.dump_all, busy thread |"
    puts "|---|---|---|---|---|---|"
    Dir.mktmpdir("memprof-dump-bench") do |dir|
      rubies(build).each do |name, ruby, ext_dir|
        cells = [%w[objspace alone], %w[memprof alone], %w[objspace busy], %w[memprof busy]].map do |writer, busy|
          runs = Array.new(reps) { measure(ruby, ext_dir, writer, busy, strings, dir, cli) }
          seconds = runs.map(&:first).sort[reps / 2]
          dangling = runs.map { |run| run[1] }.max
          [format("%.2f s", seconds) + (dangling.positive? ? ", #{dangling} absent refs" : ""), runs.last[2]]
        end
        puts "| #{name} | #{(cells.first[1] / 1e6).round(1)} MB | #{cells.map(&:first).join(' | ')} |"
      end
    end
  end
end

DumpAllBench.run(ARGV) if $PROGRAM_NAME == __FILE__
