# frozen_string_literal: true

module Memprof
  VERSION = "0.1.0"
end
