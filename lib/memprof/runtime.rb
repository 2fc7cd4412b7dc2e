# frozen_string_literal: true

module Memprof
  # Which Ruby runtimes memprof can profile: CRuby (MRI) 2.7 to 3.4 on x86-64 Linux. The hooks
  # patch x86-64 ELF objects and rely on CRuby's object layout and allocation functions.
  module Runtime
    SUPPORTED_VERSIONS = (Gem::Version.new("2.7")...Gem::Version.new("3.5"))

    # The reason this runtime is unsupported, or nil.
    def self.problem(engine: RUBY_ENGINE, version: RUBY_VERSION, platform: RUBY_PLATFORM)
      return "memprof needs CRuby (MRI); this is #{engine}" unless engine == "ruby"
      unless SUPPORTED_VERSIONS.cover?(Gem::Version.new(version))
        return "memprof supports Ruby 2.7 to 3.4; this is Ruby #{version}"
      end
      return "memprof needs x86-64 Linux; this is #{platform}" unless platform.match?(/\Ax86_64-linux/)

      nil
    end

    def self.check!(**runtime)
      reason = problem(**runtime)
      raise UnsupportedRuntimeError, reason if reason
    end
  end
end
