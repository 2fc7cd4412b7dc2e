# frozen_string_literal: true

module Memprof
  # GC compaction can move an untracked object into the slot of a tracked one that died in the
  # same GC; the tracker's type check cannot tell them apart (docs/ruby.md, "Frees"). So every
  # way Ruby offers to compact runs with the tracker warned: frees are watched for its
  # duration, and the survivors are rekeyed when objects move.
  module Compaction
    @count = 0

    # How many compactions ran through GC.compact and verify_compaction_references.
    def self.count
      @count
    end

    # Runs the block (a compaction) with the tracker watching frees and ready to rekey.
    def self.window
      Memprof::Native.compaction_window_begin
      begin
        yield
      ensure
        @count += 1
        Memprof::Native.compaction_window_end
      end
    end

    # Prepended to GC's singleton class.
    module GuardedGC
      def compact(*args, **kwargs)
        Compaction.window { super }
      end

      def verify_compaction_references(*args, **kwargs)
        Compaction.window { super }
      end

      def auto_compact=(flag)
        result = super
        Memprof::Native.auto_compaction = flag ? true : false
        result
      end
    end

    def self.sync_auto_compact
      Memprof::Native.auto_compaction = GC.respond_to?(:auto_compact) && GC.auto_compact ? true : false
    end

    GC.singleton_class.prepend(GuardedGC)
  end
end
