# frozen_string_literal: true

# The demo of `make demo`: profiles the bundled shop app (examples/shop) under a burst of
# requests with Memprof.report and shows which line keeps objects alive.
#   ruby -I lib examples/profile_shop.rb [REQUESTS]
requests = Integer(ARGV.fetch(0, "1000"), exception: false)
abort "usage: profile_shop.rb [REQUESTS]  (a positive number)" unless requests&.positive?

require "memprof"
require_relative "shop/traffic"

traffic = Shop::Traffic.new
# Warm-up: the first requests fill caches that are meant to stay (Rack's, JSON's), which is
# not what we are looking for.
traffic.serve(100)

report = Memprof.report { traffic.serve(requests) }

# The report's text view, retained objects first: they are what a leak is made of. Paths are
# shown relative to the checkout.
root = "#{File.expand_path('..', __dir__)}/"
puts "Memprof.report over #{requests} requests to examples/shop"
puts "Total allocated: #{report.total_allocated_memsize} bytes (#{report.total_allocated} objects)"
puts "Total retained:  #{report.total_retained_memsize} bytes (#{report.total_retained} objects)"
[[:retained, :location], [:retained, :class], [:allocated, :location]].each do |kind, by|
  puts
  puts "#{kind} objects by #{by} (top 5)"
  puts "-" * 35
  report.group(kind, by: by).first(5).each do |group|
    puts format("%10d  %s", group[:count], group[:name].to_s.delete_prefix(root))
  end
end

# The leaking line is the location with the most retained objects, whatever their classes.
rows = report.to_h.fetch("retained").fetch("by_location")
if rows.empty?
  puts "\nNo object allocated during the #{requests} requests is still alive: no leak."
else
  location, at_top = rows.group_by { |row| row.fetch("location") }
                         .max_by { |_, group| group.sum { |row| row.fetch("count") } }
  count = at_top.sum { |row| row.fetch("count") }
  classes = at_top.sort_by { |row| [-row.fetch("count"), row.fetch("class")] }
                  .map { |row| "#{row.fetch('count')} #{row.fetch('class')}" }.join(", ")
  puts format("\nLeak: %s keeps %d objects alive (%s) after %d requests: %.1f per request.",
              location.delete_prefix(root), count, classes, requests, count.fdiv(requests))
end
