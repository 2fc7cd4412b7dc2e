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

  # Runs `code` as the script file `name` in a fresh `ruby -I lib -r memprof`; returns
  # [stdout, stderr] and fails the test on a non-zero exit (unless `status:` says otherwise).
  def run_ruby(code, name: "program.rb", status: 0, env: {}, args: [])
    Dir.mktmpdir("memprof-test") do |dir|
      path = File.join(dir, name)
      File.write(path, code)
      out, err, st = Open3.capture3(env, RbConfig.ruby, "-I", LIB, "-r", "memprof", path, *args,
                                    chdir: dir)
      assert_equal status, st.exitstatus, "exit status of #{name}\n--- stdout\n#{out}\n--- stderr\n#{err}"
      yield(out, err, path) if block_given?
      [out, err]
    end
  end

  # Memprof.stats lines as {"file:line:Class" => count}, only for lines naming `file`.
  def stats_for(text, file)
    text.lines.grep(/\A *\d+ /).each_with_object({}) do |line, out|
      count, site = line.strip.split(" ", 2)
      out[site.sub("#{file}:", "L")] = Integer(count) if site.start_with?("#{file}:")
    end
  end
end
