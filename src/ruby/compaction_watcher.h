// A T_DATA object whose type has a dcompact function: Ruby calls it for every such object
// during the reference-update phase of a compacting GC, after objects have moved and left
// T_MOVED forwarding slots behind. That is where the tracker rekeys its table (the technique
// ext/objspace uses for its allocation table).
#pragma once

namespace memprof::ruby {

class Tracker;

// Creates the watcher once (later calls do nothing) and keeps it alive for the process.
void install_compaction_watcher(Tracker& tracker);

}  // namespace memprof::ruby
