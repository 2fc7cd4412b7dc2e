# frozen_string_literal: true

# Shared by the memprof gem's integration tests: every test runs the machine's real ruby with
# the checkout's lib/ (where the build put lib/memprof/memprof.so) in a fresh process, so that
# no test sees another's tracked objects.
require "minitest/autorun"
require "open3"
require "rbconfig"
require "json"
require "tmpdir"

module MemprofTestHelper
  ROOT = File.expand_path("../..", __dir__)
  LIB = File.join(ROOT, "lib")
  # The extension built for the running Ruby when it is one of the test matrix's
  # (cmake/ruby_tests.cmake), ahead of lib/memprof/memprof.so, which is the machine ruby's.
  LOAD_PATH = [ENV["MEMPROF_EXT_DIR"], LIB].compact.flat_map { |dir| ["-I", dir] }.freeze

  # Runs `code` as the script file `name` in a fresh `ruby -I lib -r memprof` (without `-r
  # memprof` when `preload` is false: the script requires what it needs); returns [stdout,
  # stderr] and fails the test on a non-zero exit (unless `status:` says otherwise).
  def run_ruby(code, name: "program.rb", status: 0, env: {}, args: [], preload: true)
    Dir.mktmpdir("memprof-test") do |dir|
      path = File.join(dir, name)
      File.write(path, code)
      requires = preload ? ["-r", "memprof"] : []
      out, err, st = Open3.capture3(env, RbConfig.ruby, *LOAD_PATH, *requires, path, *args,
                                    chdir: dir)
      assert_equal status, st.exitstatus, "exit status of #{name}\n--- stdout\n#{out}\n--- stderr\n#{err}"
      yield(out, err, path) if block_given?
      [out, err]
    end
  end

  # Ruby marks the machine stack conservatively: a word a C function left behind can keep one
  # of a loop's last garbage objects alive (seen on Ruby 3.3: the last Float#to_s String of a
  # loop, one run in one), and then it is live for memprof too. Drops one such survivor of each
  # line that makes only garbage ("L9:String").
  def without_stack_survivors(stats, *garbage_only)
    stats.reject { |site, count| garbage_only.include?(site) && count == 1 }
  end

  # Memprof.stats lines as {"file:line:Class" => count}, only for lines naming `file`.
  def stats_for(text, file)
    text.lines.grep(/\A *\d+ /).each_with_object({}) do |line, out|
      count, site = line.strip.split(" ", 2)
      out[site.sub("#{file}:", "L")] = Integer(count) if site.start_with?("#{file}:")
    end
  end
end
