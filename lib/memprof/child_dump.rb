# frozen_string_literal: true

module Memprof
  # Memprof.dump_all writes its dump in a child process when the app's other threads could run
  # in the middle of it.
  #
  # Ruby 3.1-3.3's ObjectSpace.dump_all writes its 4 KB buffer through Ruby's IO
  # (rb_io_bufwrite), and each write lets the other threads run:
  # * a thread busy on the CPU keeps the GVL for its time slice (100 ms) at every write: a 10 MB
  #   dump beside one thread that allocates in a loop took seconds to a minute, not a tenth;
  # * the dump is no single moment of the heap: what those threads make and drop meanwhile is in
  #   it or not depending on the pages it had passed, and it refers to objects it does not hold;
  # * a switch in the middle of marking a thread's frames reads frames popped meanwhile (Ruby
  #   3.4's objspace writes through a FILE* instead for that reason: ruby/ruby#12285, a segfault).
  # The child (src/ruby/forked_child.h) holds only the calling thread: it writes the heap as it
  # was at the fork, with every thread's roots, as fast as with no other thread, while the app's
  # threads go on here and only the calling thread waits for it.
  module ChildDump
    WRITES_THROUGH_RUBY_IO = RUBY_VERSION < "3.4"

    # Runs the block in the child when that is wanted and possible, else here. What the block
    # raised in the child is raised here.
    def self.run(&work)
      return work.call unless wanted?

      answer = begin
        Native.in_child_process([Ractor.current, *Thread.list]) { outcome_of(&work) }
      rescue Error => e # the child ended without answering
        raise Error, "Memprof.dump_all: the dump's #{e.message}"
      end
      # No child could be made (fork failed): written here, as before children were used.
      return work.call if answer.nil?

      raise Marshal.load(answer) unless answer.empty? # rubocop:disable Security/MarshalLoad -- our child's
    end

    # Ruby cannot fork while other Ractors run (the child waits for them forever).
    def self.wanted?
      WRITES_THROUGH_RUBY_IO && Thread.list.size > 1 && !(defined?(Ractor.count) && Ractor.count > 1)
    end

    # In the child: "" once the block has run, or the exception it raised, marshaled.
    def self.outcome_of(&work)
      work.call
      ""
    rescue Exception => e # rubocop:disable Lint/RescueException -- the parent raises it
      begin
        Marshal.dump(e)
      rescue TypeError
        Marshal.dump(Error.new("Memprof.dump_all: #{e.class}: #{e.message}"))
      end
    end
    private_class_method :wanted?, :outcome_of
  end
end
