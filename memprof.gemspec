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
    allocation sites) and a Rack middleware. CRuby 2.7-3.4 on x86-64 Linux.
  TEXT
  s.authors = ["memprof developers"]
  s.homepage = "https://github.com/memprof/memprof"
  s.required_ruby_version = [">= 2.7", "< 3.5"]
  s.platform = Gem::Platform::RUBY
  s.extensions = ["ext/memprof/extconf.rb"]
  s.require_paths = ["lib"]
  root = __dir__
  s.files = Dir.chdir(root) do
    Dir["lib/memprof.rb", "lib/memprof/*.rb", "ext/memprof/*.{rb,cc,h}", "docs/ruby.md",
        "src/ruby/*.{h,cc}", "src/core/track/*.{h,cc}", "src/core/hook/*.{h,cc}",
        "src/core/hook/x86_64/*.{h,cc}", "src/core/util/*.{h,cc}"]
  end
end
