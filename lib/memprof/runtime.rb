# frozen_string_literal: true

module Memprof
  # Which Ruby runtimes memprof can profile: CRuby (MRI) 2.7 to 3.4 on x86-64 Linux. The hooks
  # patch x86-64 ELF objects and rely on CRuby's object layout and allocation functions.
  module Runtime
    # [major, minor] bounds, compared without rubygems: `memprof run` loads memprof while Ruby is
    # still booting, before Gem::Version exists.
    OLDEST = [2, 7].freeze
    NEWEST = [3, 4].freeze

    # The reason this runtime is unsupported, or nil.
    def self.problem(engine: RUBY_ENGINE, version: RUBY_VERSION, platform: RUBY_PLATFORM)
      return "memprof needs CRuby (MRI); this is #{engine}" unless engine == "ruby"
      major_minor = version.split(".").first(2).map(&:to_i)
      unless (major_minor <=> OLDEST) >= 0 && (major_minor <=> NEWEST) <= 0
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
