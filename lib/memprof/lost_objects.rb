# frozen_string_literal: true

module Memprof
  # A compaction the tracker could not follow (GC.compact reached around memprof's wrapper, or
  # one while other Ractors ran) makes it forget every tracked object rather than risk naming
  # moved-in objects by wrong sites (Memprof.info[:lost_to_compaction]). The read-outs after it
  # would be short without a word: the first one says how many were lost.
  module LostObjects
    @noted = 0  # lost_to_compaction when a read-out last said so

    # What to say about the objects lost since the last read-out that said it, or nil.
    def self.note
      lost = Native.info[:lost_to_compaction]
      @noted = 0 if lost < @noted  # a new tracker
      return if lost == @noted

      count = lost - @noted
      @noted = lost
      "#{count} tracked objects were forgotten at a GC compaction memprof could not follow (other " \
        "Ractors running, or GC.compact called around memprof's wrapper); they are missing from this " \
        "read-out and the later ones"
    end
  end
end
