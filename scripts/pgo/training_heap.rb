# Writes the heap dump that scripts/pgo-train runs the heap analyzer on, so that GCC's
# profile-guided optimization sees the analyzer's hot paths as a real dump exercises them:
#
#   ruby training_heap.rb BEFORE.json AFTER.json
#
# Not a benchmark dump (bench/heap makes those): a program of its own, so that the build is not
# tuned to the dumps it is measured on. A process with a broad part of the standard library
# loaded (classes, modules, instruction sequences, constants: what any application has) and,
# under allocation tracing, the kinds of objects applications keep: records in Hashes, Arrays
# of Strings with copies among them, Structs that form a cycle, a linked chain.
# BEFORE is dumped after the first rounds, AFTER at the end: a growing heap for `memprof diff`.
require "objspace"
require "json"
require "set"
require "erb"
# What this Ruby has of them: some became bundled gems (csv, bigdecimal in 3.4).
%w[uri net/http optparse ostruct time date csv logger fileutils tempfile digest securerandom
   strscan rdoc bigdecimal prettyprint].each do |lib|
  require lib
rescue LoadError
  nil
end

before, after = ARGV.fetch(0), ARGV.fetch(1)
rounds = 4

Record = Struct.new(:id, :name, :tags, :parent)
Link = Struct.new(:value, :next_link)

class Registry
  def initialize
    @entries = {}
  end

  def add(key, value)
    @entries[key] = value
  end
end

def dump(path)
  GC.start
  File.open(path, "w") { |f| ObjectSpace.dump_all(output: f) }
end

ObjectSpace.trace_object_allocations_start
$kept = []
registry = Registry.new
rounds.times do |round|
  records = Array.new(6_000) do |i|
    Record.new(i, "record #{i % 700}", %w[red green blue].map { |t| "#{t}-#{i % 50}" }, nil)
  end
  records.each_cons(2) { |a, b| b.parent = a }
  records.first.parent = records.last  # a cycle
  chain = nil
  4_000.times { |i| chain = Link.new(i, chain) }
  documents = Array.new(1_500) { |i| JSON.parse(%({"id":#{i},"items":[1,2,3],"meta":{"k":"v#{i % 9}"}})) }
  registry.add(round, records)
  $kept << { round: round, chain: chain, documents: documents, seen: Set.new(records.map(&:id)),
             text: ERB.new("<%= round %> of <%= rounds %>").result(binding) }
  dump(before) if round == rounds - 2
end
dump(after)
