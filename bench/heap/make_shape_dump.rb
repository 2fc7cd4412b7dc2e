# Writes an ObjectSpace.dump_all file of one of the heap shapes the reader must stay fast on,
# allocation tracing on (file/line/generation on every object allocated here):
#
#   ruby make_shape_dump.rb SHAPE OUT.json
#
# chain:     a 330,000-node linked list and ~950,000 small objects (short strings, 1-element
#            arrays): ~1.28M objects, short lines, one very deep dominator tree.
# tiny:      ~1.3M tiny arrays and hashes (0-2 elements) in a few big arrays: the shortest lines.
# bigstring: one 100 MB String (one 100 MB line) among a few thousand objects.
require "objspace"

shape, out = ARGV.fetch(0), ARGV.fetch(1)

require_relative "node"

ObjectSpace.trace_object_allocations_start
case shape
when "chain"
  list = nil
  330_000.times { |i| list = Node.new(i, list) }
  $list = list
  $small = Array.new(475_000) { |i| i.even? ? "s#{i % 1000}" : [i] }
  $more = Array.new(475_000) { |i| (i % 3).zero? ? [] : "t#{i % 500}" }
when "tiny"
  $arrays = Array.new(650_000) { |i| i % 3 == 0 ? [] : [i, i + 1] }
  $hashes = Array.new(650_000) { |i| i.even? ? {} : { i => i } }
when "bigstring"
  $big = "x" * 100_000_000
  $others = Array.new(5_000) { |i| "small #{i}" }
else
  abort "make_shape_dump.rb: unknown shape #{shape} (chain, tiny, bigstring)"
end
GC.start
File.open(out, "w") { |f| ObjectSpace.dump_all(output: f) }
