# frozen_string_literal: true

require_relative "lib/memprof/version"

Gem::Specification.new do |s|
  s.name = "memprof"
  s.version = Memprof::VERSION
  s.summary = "Which lines of Ruby code create the objects that stay alive: exact counts at low overhead"
  s.description = <<~TEXT
    memprof tracks every Ruby object allocated between Memprof.start and Memprof.stop with the
    file:line and class it was created at, by hooking libruby's allocation functions through
    their GOT slots instead of Ruby's slow-path allocation events. Memprof.stats, track, report
    (allocated and retained by gem, file, location and class), dump, dump_all (heap dumps with
    allocation sites) and a Rack middleware; and the memprof command, which attaches to a
    running Ruby process by PID (memprof attach/top/stats/leaks/dump/detach) and analyzes heap
    dumps. CRuby 2.7-3.4 on x86-64 Linux.
  TEXT
  s.authors = ["memprof developers"]
  s.homepage = "https://github.com/memprof/memprof"
  s.license = "MIT"
  s.required_ruby_version = [">= 2.7", "< 3.5"]
  s.platform = Gem::Platform::RUBY
  s.extensions = ["ext/memprof/extconf.rb"]
  s.require_paths = ["lib"]
  s.bindir = "exe"
  s.executables = ["memprof"]
  s.requirements << "rack, for Memprof::Middleware (not needed otherwise)"
  s.requirements << "to build: g++ with C++20, libzydis-dev, libfmt-dev; " \
                    "for the memprof command: cmake, libsimdjson-dev, libpng-dev, libzstd-dev, liblzma-dev, zlib1g-dev, libcli11-dev"
  root = __dir__
  # The sources of the extension (src/ruby and what it links) and of the command-line tool, which
  # extconf.rb builds with CMake; no tests, benchmarks or build products.
  s.files = Dir.chdir(root) do
    Dir["LICENSE", "README.md", "docs/ruby.md", "exe/memprof", "lib/memprof.rb", "lib/memprof/*.rb",
        "ext/memprof/*.{rb,cc,h}", "CMakeLists.txt", "cmake/profile_guided.cmake", "src/**/CMakeLists.txt",
        "src/**/*.{h,cc}", "scripts/pgo-train", "scripts/pgo/*.rb"]
  end
end
