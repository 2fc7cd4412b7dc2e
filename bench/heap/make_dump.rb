# Writes an ObjectSpace.dump_all file of a process holding a large, realistic object graph, with
# allocation tracing on (file/line/generation on every object allocated here).
#
#   ruby make_dump.rb OUT.json [RECORDS]
#
# RECORDS (default 200000) "customer" records, each: an object with 5 ivars, 3 strings, an
# array, a hash with 2 entries and a Struct -- ~7 objects per record -- plus a 50,000-node linked
# list and an index hash over the records. 200,000 records give ~1.5M objects, ~400 MB of dump.
require "objspace"

out = ARGV.fetch(0)
records = Integer(ARGV.fetch(1, "200000"))

Address = Struct.new(:street, :city)

class Customer
  def initialize(id, index)
    @id = id
    @name = "customer-#{id}"
    @email = "c#{id}@example.com"
    @tags = [:new, :retail, "seg-#{id % 97}"]
    @address = Address.new("#{id} Main St", index)
    @prefs = { "lang" => "en", "n" => id }
  end
end

require_relative "node"

ObjectSpace.trace_object_allocations_start
cities = Array.new(100) { |i| "city-#{i}".freeze }
$customers = Array.new(records) { |i| Customer.new(i, cities[i % cities.size]) }
$index = {}
$customers.each_with_index { |c, i| $index[i] = c if i.even? }
list = nil
50_000.times { |i| list = Node.new(i, list) }
$list = list
GC.start
File.open(out, "w") { |f| ObjectSpace.dump_all(output: f) }
