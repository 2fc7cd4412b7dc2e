# frozen_string_literal: true

module Memprof
  # Memprof.dump_all writes its dump in a child process when the app has other threads: they
  # would run in the middle of it, at every call that gives up the GVL.
  #
  # Ruby 3.1-3.3's ObjectSpace.dump_all writes its 4 KB buffer through Ruby's IO
  # (rb_io_bufwrite), and each write lets the other threads run:
  # * a thread busy on the CPU keeps the GVL for its time slice (100 ms) at every write: a 10-13 MB
  #   dump beside one thread that allocates in a loop took 30-39 s on 3.1, 102-103 s on 3.3;
  # * the dump is no single moment of the heap: what those threads make and drop meanwhile is in
  #   it or not depending on the pages it had passed, and it refers to objects it does not hold;
  # * a switch in the middle of marking a thread's frames reads frames popped meanwhile (Ruby
  #   3.4's objspace writes through a FILE* instead for that reason: ruby/ruby#12285, a segfault).
  # On 3.4 the dump itself lets no thread run, but opening, closing and renaming its files each
  # do: 1.4 s for the same dump, against 0.23 s for ObjectSpace.dump_all beside the same thread.
  # The child (src/ruby/forked_child.h) holds only the calling thread: it writes the heap as it
  # was at the fork, with every thread's roots, as fast as with no other thread, while the app's
  # threads go on here and only the calling thread waits for it.
  module ChildDump
    # Runs the block in the child when that is wanted and possible, else here. What the block
    # raised in the child is raised here. The child names its scratch files after this process
    # (Output.owner_pid): if it dies, if it is asleep for `stall_timeout` seconds (unless nil)
    # with no CPU time and no I/O (then killed: Memprof::Error), or if the wait is interrupted
    # (Thread#raise, Ctrl-C: the child is killed), the files `leftovers` names for its pid are
    # removed.
    def self.run(leftovers:, stall_timeout:, &work)
      return work.call unless wanted?

      parent = Native.getpid
      answered = false
      forked = [] # the child's pid, once it is made
      begin
        answer = Native.in_child_process([Ractor.current, *Thread.list], stall_timeout, forked) do
          Output.owner_pid = parent
          outcome_of(&work)
        end
        answered = true
      rescue Error => e # it died before it answered, or hung and was killed
        raise Error, "Memprof.dump_all: the dump's #{e.message}"
      ensure
        # Dead, or killed because the wait was interrupted (an ensure: Timeout's is a throw,
        # which no rescue sees): its files go.
        unless answered
          files = forked.compact.flat_map { |child| leftovers.call(child) }
          files.each { |file| File.unlink(file) if File.exist?(file) }
        end
      end
      # No child could be made (fork failed): written here, as before children were used.
      return work.call if answer.nil?

      raise Marshal.load(answer) unless answer.empty? # rubocop:disable Security/MarshalLoad -- our child's
    end

    # Ruby cannot fork while other Ractors run (the child waits for them forever).
    def self.wanted?
      Thread.list.size > 1 && !(defined?(Ractor.count) && Ractor.count > 1)
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
