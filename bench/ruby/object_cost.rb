# frozen_string_literal: true

# memprof's memory per live tracked object, measured from the outside:
#   ruby [-I <repo>/lib] bench/ruby/object_cost.rb {plain|memprof} COUNT
# keeps COUNT objects alive (a third each of String, Array and Hash, made without temporaries
# so no garbage inflates the tables) and prints one JSON line with the growth of the resident
# set across the allocation and, under memprof, the number of live objects Memprof.stats
# lists and what memprof says its tables take (Memprof.info). The runner subtracts the plain
# run's growth from memprof's and divides by the live count: what memprof's tables cost per
# object seen from outside, allocator slack and growth policy included.
require "etc"
require "json"
require "stringio"
require_relative "profilers"

def resident_bytes
  File.read("/proc/self/statm").split[1].to_i * Etc.sysconf(Etc::SC_PAGESIZE)
end

mode, count = ARGV
unless ARGV.size == 2 && %w[plain memprof].include?(mode) && count.match?(/\A\d+\z/)
  abort "usage: object_cost.rb {plain|memprof} COUNT"
end
count = Integer(count)

require "memprof" if mode == "memprof"
makers = [-> { String.new }, -> { [] }, -> { {} }]
GC.start
Memprof.start if mode == "memprof"
before = resident_bytes
kept = Array.new(count) { |i| makers[i % 3].call }
GC.start
growth = resident_bytes - before
live = 0
info = {}
if mode == "memprof"
  out = StringIO.new
  Memprof.stats(out)
  live = Profilers.parse_stats(out.string).values.sum
  info = Memprof.info
  Memprof.stop
end
puts JSON.generate(mode: mode, objects: kept.size, resident_growth: growth, live_tracked: live,
                   table_bytes: info[:table_bytes], site_bytes: info[:site_bytes],
                   entries: info[:entries])
