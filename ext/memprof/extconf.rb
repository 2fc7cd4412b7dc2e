# frozen_string_literal: true

# Builds memprof/memprof.so for `gem install`: the extension's glue (this directory) plus the
# C++ it shares with the CMake build and the attach agent, compiled from the gem's src/:
# src/ruby (the Ruby bridge), src/core/track (the tracker), src/core/hook (the hooking engine)
# and src/core/util (errors, RAII, the /proc maps parser the hooking engine reads its pages
# with). Zydis and fmt come from the system (Debian: libzydis-dev, libfmt-dev).
require "mkmf"

root = File.expand_path("../..", __dir__)
src = File.join(root, "src")
# Those that include Ruby's headers last (see below).
source_dirs = ["core/track", "core/hook", "core/hook/x86_64", "core/util", "ruby", __dir__].map do |dir|
  dir.start_with?("/") ? dir : File.join(src, dir)
end
missing = source_dirs.reject { |dir| File.directory?(dir) }
abort "memprof: source directories missing from the gem: #{missing.join(', ')}" unless missing.empty?

abort "memprof: needs the Zydis disassembler library (Debian: apt-get install libzydis-dev)" unless have_library("Zydis", "ZydisDecoderInit", "Zydis/Zydis.h")
# Not have_header: mkmf's test program includes ruby.h first, whose config.h #defines
# uint128_t and breaks fmt (src/ruby/ruby_headers.h includes fmt first for that reason).
def fmt_available?
  command = [*RbConfig::CONFIG["CXX"].split, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"]
  IO.popen(command, "r+", err: File::NULL) do |io|
    io.write("#include <fmt/format.h>\n")
    io.close_write
    io.read
  end
  $?.success?
end
abort "memprof: needs fmt (Debian: apt-get install libfmt-dev)" unless fmt_available?

# Eight sources to a compilation unit, as the CMake build compiles the extension: fmt is
# header-only here (the extension loads no other library into the user's process) and costs
# seconds per unit, so thirty units took minutes of `gem install`. In the order of source_dirs,
# so that no code of the core follows ruby.h in a unit (Ruby 3.1's `#define memcpy
# ruby_nonempty_memcpy` breaks std::memcpy).
sources = source_dirs.flat_map { |dir| Dir[File.join(dir, "*.cc")].sort }
$srcs = sources.each_slice(8).with_index.map do |group, index|
  unit = "memprof_unit_#{index}.cc"
  File.write(unit, group.map { |file| "#include \"#{file}\"\n" }.join)
  unit
end
$INCFLAGS << " -I#{src}"
# fmt as a header-only library, as the CMake build links fmt::fmt-header-only.
$CXXFLAGS << " -std=c++20 -fvisibility=hidden -DFMT_HEADER_ONLY=1"
$LDFLAGS << " -Wl,-z,relro,-z,now"
$libs << " -ldl"
# Shipped, not debugged: no debug information, symbols stripped (24 MB -> about 1.5 MB).
RbConfig::MAKEFILE_CONFIG["debugflags"] = ""
$LDFLAGS << " -s"

create_makefile("memprof/memprof")

# RubyGems installs from a temporary directory and leaves the build directory in the gem: once
# the extension is installed, its objects and its unstripped copy are dead weight.
File.open("Makefile", "a") do |makefile|
  makefile.puts
  makefile.puts "install: clean-build-products"
  makefile.puts "clean-build-products: install-so"
  makefile.puts "\t$(Q) $(RM) $(OBJS) $(DLLIB) $(SRCS)"
end

# The command-line tool (`memprof analyze`, `heapmap`, ...): the C++ CLI, built with CMake from
# the gem's sources into libexec/, which exe/memprof runs. It is optional -- the profiler is the
# extension above -- so a failure is recorded for exe/memprof to explain, not fatal.
# MEMPROF_GEM_CLI=0 skips it.
CLI_OPTIONS = ["-DMEMPROF_CLI_ONLY=ON", "-DCMAKE_BUILD_TYPE=Release"].freeze

def logged(log, *command)
  system(*command, out: [log, "a"], err: [log, "a"])
end

def cmake_build(log, build, target)
  logged(log, "cmake", "--build", build, "--target", target, "-j", Etc.nprocessors.to_s)
end

# MEMPROF_GEM_PGO=1: the heap analyzer with profile-guided optimization, as `make` builds it
# in a checkout (cmake/profile_guided.cmake): a profiling build of the CLI first, trained on a
# heap this Ruby makes (scripts/pgo-train). Minutes more of install for a faster `memprof
# analyze`; off by default. Returns the real build's option, or none if the training failed.
def trained_profile(root, build, log)
  return [] unless ENV["MEMPROF_GEM_PGO"] == "1"

  tree = File.join(build, "pgo-tree")
  data = File.join(build, "pgo-data")
  trained = logged(log, "cmake", "-S", root, "-B", tree, *CLI_OPTIONS, "-DMEMPROF_PROFILE_GENERATE=#{data}") &&
            cmake_build(log, tree, "memprof") &&
            logged(log, { "RUBY" => RbConfig.ruby }, "bash", File.join(root, "scripts/pgo-train"),
                   File.join(tree, "memprof"), data)
  return ["-DMEMPROF_PROFILE_USE=#{data}"] if trained

  warn "memprof: MEMPROF_GEM_PGO=1, but the profiling build or its training failed: " \
       "the memprof command is built without profile-guided optimization"
  []
end

def build_cli(root)
  libexec = File.join(root, "libexec")
  FileUtils.mkdir_p(libexec)
  record = File.join(libexec, "memprof.not-built")
  return File.write(record, "MEMPROF_GEM_CLI=0 at install") if ENV["MEMPROF_GEM_CLI"] == "0"
  return File.write(record, "cmake not found") unless find_executable("cmake")

  Dir.mktmpdir("memprof-cli") do |build|
    log = File.join(build, "build.log")
    main = File.join(build, "main")
    configured = logged(log, "cmake", "-S", root, "-B", main, *CLI_OPTIONS, *trained_profile(root, build, log))
    # One target per call: the CLI, then the agent `memprof attach` loads into processes.
    built = configured && %w[memprof memprof_agent].all? { |target| cmake_build(log, main, target) }
    unless built
      File.write(record, "CMake #{configured ? 'build' : 'configuration'} failed: " +
                         File.readlines(log).grep(/error|Could not find|not found/i).first.to_s.strip)
      return
    end
    %w[memprof libmemprof_agent.so].each do |file|
      FileUtils.cp(File.join(main, file), File.join(libexec, file))
      system("strip", File.join(libexec, file))
    end
    FileUtils.rm_f(record)
  end
end

require "etc"
require "fileutils"
require "tmpdir"
build_cli(root)
