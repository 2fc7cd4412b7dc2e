# frozen_string_literal: true

# Loaded by `memprof run` through RUBYOPT before the program's first line, so that tracking
# covers the whole run. MEMPROF_RUN_EXTENSIONS lists the extensions the memprof command knows,
# "ABI|LIBRUBY|PATH" separated by ";" (src/attach/installation.h): the one built for this Ruby
# (same major.minor; the same libruby, or none for a Ruby with libruby linked in) is loaded.
module Memprof
  module Autostart
    def self.extension(listed = ENV.fetch("MEMPROF_RUN_EXTENSIONS", ""))
      abi = RUBY_VERSION.split(".").first(2).join(".")
      libruby = RbConfig::CONFIG["ENABLE_SHARED"] == "yes" ? RbConfig::CONFIG["LIBRUBY_SO"].to_s : ""
      candidates = listed.split(";").map { |entry| entry.split("|", 3) }
                         .select { |entry_abi, _, _| entry_abi == abi }
      exact = candidates.find { |_, needed, _| !needed.empty? && libruby.start_with?(needed) }
      (exact || candidates.find { |_, needed, _| needed.empty? })&.last
    end

    class << self
      # The tracking session this started (Memprof.tracking_session): `memprof run`'s, which
      # `memprof detach` stops as it stops an attach's (lib/memprof/agent.rb).
      attr_accessor :session
    end
  end
end

require "rbconfig"
if (path = Memprof::Autostart.extension)
  Memprof.instance_variable_set(:@agent_extension, path)
  begin
    require_relative "../memprof"
  ensure
    Memprof.remove_instance_variable(:@agent_extension)
  end
  # The program's own `require "memprof"` finds the memprof already loaded (it raised
  # LoadError: this directory was on no load path). Last, so that nothing of the program's
  # resolves here that did not before.
  lib = File.expand_path("..", __dir__)
  $LOAD_PATH << lib unless $LOAD_PATH.include?(lib)
  Memprof::Autostart.session = Memprof.send(:tracking_session) if Memprof.start
else
  warn "memprof: no extension for Ruby #{RUBY_VERSION} among those memprof has; nothing is tracked"
end
