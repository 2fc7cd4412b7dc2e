# frozen_string_literal: true

require_relative "source_line"

# Workload (a): an allocation-heavy loop, the worst case for an allocation tracker. Every
# iteration makes short-lived strings, an array and a hash (the shapes Ruby code allocates
# most), and one iteration in KEEP_EVERY keeps its hash alive, so the run ends with a live
# set as well as millions of dead objects.
module AllocLoop
  ITERATIONS = 2_500_000
  KEEP_EVERY = 1_000

  # Objects allocated per iteration, counted from the body below (tests/ruby_parity checks it
  # against GC.stat): Integer#to_s inside the interpolation, the interpolated String, the
  # upcased String, the Array literal and the Hash literal.
  OBJECTS_PER_ITERATION = 5
  # The counter starts here rather than at 0 because Integer#to_s may answer single digits
  # without allocating (Ruby caches them), which would make the count above inexact.
  FIRST_INDEX = 1_000_000

  # The hash literal that run keeps.
  KEPT_LINE = SourceLine.of(__FILE__, /^\s+record = \{/)

  def self.description
    format("alloc loop: %.1fM objects (String, Array, Hash)", objects_allocated / 1e6)
  end

  def self.prepare(scale)
    @iterations = (ITERATIONS * scale).to_i
  end

  # Returns the kept hashes so that they stay alive until the profiler's scope ends.
  def self.run
    kept = []
    i = FIRST_INDEX
    n = FIRST_INDEX + @iterations
    while i < n
      name = "item-#{i}"
      pair = [name, name.upcase]
      record = { name: name, pair: pair, index: i }
      kept << record if (i % KEEP_EVERY).zero? # FIRST_INDEX is a multiple of KEEP_EVERY
      i += 1
    end
    kept
  end

  # Not counting the array that holds the kept hashes.
  def self.objects_allocated = @iterations * OBJECTS_PER_ITERATION

  def self.kept_site = "#{__FILE__}:#{KEPT_LINE}"

  def self.kept_count = (@iterations + KEEP_EVERY - 1) / KEEP_EVERY
end
