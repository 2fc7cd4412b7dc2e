# frozen_string_literal: true

module Memprof
  # Ractor.new while memprof tracks through Ruby's NEWOBJ event (mechanism :tracepoint, or
  # :auto where the hooks cannot be installed) is refused with a Memprof::Error: Ruby fires the
  # event only in the Ractor that enabled it, so the new Ractor's objects would go uncounted,
  # and Ruby 3.1 crashes outright (a NEWOBJ hook plus a Ractor: the new Ractor's thread
  # segfaults in its first allocation, as with ObjectSpace.trace_object_allocations_start).
  # Inside an allocation hook nothing can be raised, so the check is made before the Ractor
  # exists. Tracker::start refuses the NEWOBJ event while other Ractors are alive, so with it on
  # only the main Ractor can call Ractor.new, and there the check and the creation run under
  # Memprof's lock, which start holds too.
  module Ractors
    MAIN = Ractor.current if defined?(Ractor)

    # Prepended to Ractor's singleton class.
    module GuardedRactor
      def new(*args, **kwargs, &block)
        # Other Ractors cannot read Memprof's lock; the NEWOBJ event is never on while they run.
        return super unless Ractor.current == MAIN

        Memprof.send(:refusing_ractors_under_newobj_event) { super }
      end
    end

    Ractor.singleton_class.prepend(GuardedRactor) if defined?(Ractor)
  end
end
