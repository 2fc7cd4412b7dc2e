# frozen_string_literal: true

module Memprof
  # What a block allocated and retained, by gem, file, location (file:line) and class.
  # Built by Memprof.report from rows [file, line, class_name, count, bytes].
  class Report
    GROUPINGS = %i[gem file location class].freeze
    Row = Struct.new(:file, :line, :class_name, :count, :bytes) do
      def location
        "#{file}:#{line}"
      end

      def gem
        Report.gem_of(file)
      end
    end

    attr_reader :allocated, :retained

    def initialize(allocated_rows, retained_rows)
      @allocated = allocated_rows.map { |r| Row.new(*r) }.freeze
      @retained = retained_rows.map { |r| Row.new(*r) }.freeze
    end

    # (Plain method bodies: endless `def x = ...` needs Ruby 3.0 and the gem supports 2.7.)
    def total_allocated
      @allocated.sum(&:count)
    end

    def total_allocated_memsize
      @allocated.sum(&:bytes)
    end

    def total_retained
      @retained.sum(&:count)
    end

    def total_retained_memsize
      @retained.sum(&:bytes)
    end

    # The gem a file belongs to: NAME for .../gems/NAME-VERSION/..., the library directory
    # for Debian's vendor_ruby and Ruby's standard library, else "other".
    def self.gem_of(file)
      case file
      when %r{/gems/([^/]+?)-\d[^/]*/} then Regexp.last_match(1)
      when %r{/(?:vendor_ruby|site_ruby)/(?:\d[^/]*/)?([^/.]+)} then Regexp.last_match(1)
      when %r{/lib/ruby/\d+\.\d+\.\d+/([^/.]+)} then Regexp.last_match(1)
      else "other"
      end
    end

    # [{name:, count:, bytes:}] grouped by one of GROUPINGS, by count descending (by bytes
    # with sort: :bytes); ties by name.
    def group(kind, by:, sort: :count)
      raise ArgumentError, "group by one of #{GROUPINGS.inspect}, not #{by.inspect}" unless GROUPINGS.include?(by)

      rows = kind == :retained ? @retained : @allocated
      sums = Hash.new { |h, k| h[k] = [0, 0] }
      rows.each do |row|
        name = by == :class ? row.class_name : row.public_send(by)
        sums[name][0] += row.count
        sums[name][1] += row.bytes
      end
      metric = sort == :bytes ? :bytes : :count
      sums.map { |name, (count, bytes)| { name: name, count: count, bytes: bytes } }
          .sort_by { |g| [-g[metric], g[:name]] }
    end

    def to_h
      { "allocated" => section(@allocated, :allocated), "retained" => section(@retained, :retained) }
    end

    def to_json(*args)
      require "json" # not with memprof: see Output.replace
      to_h.to_json(*args)
    end

    # memory_profiler-style text: totals, then memory and objects by gem, file, location and
    # class, allocated then retained, `top` lines each. `out`: an IO or the path of a file, as
    # everywhere in the API (a path raised NoMethodError: "private method `puts' called").
    def print(out = $stdout, top: 50)
      Report.check_top(top, "Memprof::Report#print")
      write_text(out, text(top: top), "Memprof::Report#print")
    end

    # memory_profiler's name for #print, with its options: to_file (a path), scale_bytes ("15.10
    # kB" for 15100 bytes), detailed_report: false (the totals only). memprof keeps no strings,
    # so their sections (allocated_strings, retained_strings) and other options raise. `pp
    # report` still shows the object: PP calls pretty_print with its printer.
    def pretty_print(out = $stdout, to_file: nil, scale_bytes: false, detailed_report: true, top: 50, **others)
      return super(out) if defined?(::PP) && out.is_a?(::PP)
      unless others.empty?
        raise ArgumentError, "Memprof::Report#pretty_print: memprof does not take #{others.keys.join(', ')} " \
                             "(it takes to_file, scale_bytes, detailed_report and top)"
      end
      Report.check_top(top, "Memprof::Report#pretty_print")
      write_text(to_file || out, text(top: top, scale_bytes: scale_bytes, detailed: detailed_report),
                 "Memprof::Report#pretty_print")
    end

    # What #print writes, as a String. scale_bytes: sizes with a unit (15.10 kB); detailed:
    # false, the totals only.
    def text(top: 50, scale_bytes: false, detailed: true)
      Report.check_top(top, "Memprof::Report#text")
      size = scale_bytes ? ->(bytes) { Report.scaled_bytes(bytes) } : ->(bytes) { "#{bytes} bytes" }
      lines = ["Total allocated: #{size.call(total_allocated_memsize)} (#{total_allocated} objects)",
               "Total retained:  #{size.call(total_retained_memsize)} (#{total_retained} objects)"]
      return lines.join("\n") << "\n" unless detailed

      %i[allocated retained].each do |kind|
        [[:bytes, "memory"], [:count, "objects"]].each do |metric, word|
          GROUPINGS.each do |by|
            lines.push("", "#{kind} #{word} by #{by}", "-" * 35)
            group(kind, by: by, sort: metric).first(top).each do |g|
              value = metric == :bytes && scale_bytes ? Report.scaled_bytes(g[metric]) : g[metric].to_s
              lines << format("%10s  %s", value, g[:name])
            end
          end
        end
      end
      lines.join("\n") << "\n"
    end

    # 15100 -> "15.10 kB": powers of 1000, two decimals, as memory_profiler's scale_bytes.
    def self.scaled_bytes(bytes)
      units = %w[B kB MB GB TB PB]
      exponent = 0
      exponent += 1 while exponent < units.size - 1 && bytes >= 1000**(exponent + 1)
      format("%.2f %s", bytes.fdiv(1000**exponent), units[exponent])
    end

    # Lines per section: an Integer, 0 or more (0: the totals and the section titles only).
    def self.check_top(top, api)
      return if top.is_a?(Integer) && top >= 0

      raise ArgumentError, "#{api}: top must be an Integer >= 0, not #{top.inspect}"
    end

    # Writes the report in pprof's heap-profile format to `path` (go tool pprof, Pyroscope,
    # Parca): alloc_objects/alloc_space what the block allocated, inuse_objects/inuse_space what
    # it retained, each sample a class under the file:line that allocated it. Runs the memprof
    # command-line tool (`memprof report --input JSON --pprof PATH`); returns `path`.
    def write_pprof(path)
      require "open3" # not with memprof: see Output.replace
      require "tempfile"
      tool = Report.command_line_tool
      Tempfile.create(["memprof-report", ".json"]) do |json|
        json.write(to_json)
        json.close
        out, status = Open3.capture2e(tool, "report", "--input", json.path, "--pprof", path.to_s)
        raise Error, "Memprof::Report#write_pprof: #{out.strip}" unless status.success?
      end
      path
    end

    # The memprof executable: MEMPROF_CLI, the one `gem install` built (libexec/), or a
    # checkout's build/memprof.
    def self.command_line_tool
      root = File.expand_path("../..", __dir__)
      candidates = [ENV["MEMPROF_CLI"], File.join(root, "libexec", "memprof"), File.join(root, "build", "memprof")]
      candidates.compact.find { |path| File.file?(path) && File.executable?(path) } or
        raise Error, "Memprof::Report#write_pprof needs the memprof command-line tool: not built " \
                     "(gem pristine memprof, or make in a checkout; MEMPROF_CLI names another)"
    end

    private

    # `out`: an IO, a path, or any object with a public puts (a logger-like sink). Returns nil.
    def write_text(out, report, api)
      if !Output.io?(out) && out.respond_to?(:puts) && !out.respond_to?(:to_str) && !out.respond_to?(:to_path)
        out.puts(report)
      else
        Output.open(out, api) { |io| io.write(report) }
      end
      nil
    end

    def section(rows, kind)
      by_location = rows.map { |r| { "location" => r.location, "class" => r.class_name, "count" => r.count, "bytes" => r.bytes } }
                        .sort_by { |h| [-h["count"], h["location"], h["class"]] }
      out = { "objects" => rows.sum(&:count), "bytes" => rows.sum(&:bytes), "by_location" => by_location }
      %i[gem file class].each do |by|
        out["by_#{by}"] = group(kind, by: by).map { |g| { "name" => g[:name], "count" => g[:count], "bytes" => g[:bytes] } }
      end
      out
    end
  end
end
