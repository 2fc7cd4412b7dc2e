// Helpers for the heap tests: synthetic dumps, compression, fixtures and running memprof.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heap/heap.h"
#include "support/command_runner.h"

namespace memprof::heap::testing {

// Loads a dump from text; fails the test (and returns an empty Heap) on error.
Heap load_text(const std::string& text);

std::string gzip(const std::string& data);
std::string zstd(const std::string& data);
std::string xz(const std::string& data);
std::string unzstd(const std::string& data);  // whole-file decompression of a fixture

std::string read_file(const std::string& path);
std::string fixture_path(const std::string& name);
// The address recorded for `name` in fixtures/addresses.txt (or in another such file of
// fixtures/, e.g. ruby33_addresses.txt).
std::string fixture_address(const std::string& name, const std::string& file = "addresses.txt");

// Object lines of a dump and the sum of their "memsize", by plain text scanning (no JSON
// parser): every line starting with an "address" that is not a SHAPE line is an object.
struct ScannedDump {
  uint64_t objects = 0;
  uint64_t memsize = 0;
  uint64_t shapes = 0;  // SHAPE lines
  uint64_t shape_memsize = 0;
};
ScannedDump scan_dump(const std::string& dump);

using memprof::testing::CommandResult;
// Runs `memprof ARGS` in the fixtures directory (so dump names in the output are relative). ARGS
// is split into words by the shell, as typed on a command line.
CommandResult run_memprof(const std::string& args);

// Compares `actual` with golden/NAME; with MEMPROF_UPDATE_GOLDEN=1 in the environment, writes it.
void expect_golden(const std::string& name, const std::string& actual);

// A dump line for an object, as Ruby writes it.
std::string object_line(uint64_t address, const std::string& type, uint64_t klass,
                        const std::vector<uint64_t>& references, uint64_t memsize,
                        const std::string& extra = "");
std::string root_line(const std::string& kind, const std::vector<uint64_t>& references);

}  // namespace memprof::heap::testing
