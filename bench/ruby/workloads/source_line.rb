# frozen_string_literal: true

# The line number of the first line of +file+ that matches +pattern+. Workloads name the line
# that allocates the objects they keep this way, so that edits above it cannot make the
# profilers' checks look at the wrong line.
module SourceLine
  def self.of(file, pattern)
    index = File.foreach(file).find_index { |line| line.match?(pattern) } or
      raise ArgumentError, "#{file} has no line matching #{pattern.inspect}"
    index + 1
  end
end
