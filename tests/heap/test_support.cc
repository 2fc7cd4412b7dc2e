#include "test_support.h"

#include <gtest/gtest.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "heap/loader.h"

namespace memprof::heap::testing {

Heap load_text(const std::string& text) {
  auto heap = load_heap_from_bytes(
      {reinterpret_cast<const unsigned char*>(text.data()), text.size()}, "test.json");
  EXPECT_TRUE(heap.ok()) << (heap.ok() ? "" : heap.message());
  return heap.ok() ? std::move(*heap) : Heap{};
}

std::string gzip(const std::string& data) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, data.size()) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

std::string zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string xz(const std::string& data) {
  std::string out(lzma_stream_buffer_bound(data.size()), '\0');
  size_t written = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(3, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(data.data()),
                                    data.size(), reinterpret_cast<uint8_t*>(out.data()), &written, out.size()),
            LZMA_OK);
  out.resize(written);
  return out;
}

std::string unzstd(const std::string& data) {
  std::string out;
  ZSTD_DCtx* context = ZSTD_createDCtx();
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  std::string chunk(1 << 20, '\0');
  while (in.pos < in.size) {
    ZSTD_outBuffer buffer{chunk.data(), chunk.size(), 0};
    size_t rc = ZSTD_decompressStream(context, &buffer, &in);
    EXPECT_FALSE(ZSTD_isError(rc));
    if (ZSTD_isError(rc)) break;
    out.append(chunk.data(), buffer.pos);
  }
  ZSTD_freeDCtx(context);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string fixture_path(const std::string& name) { return std::string(MEMPROF_HEAP_FIXTURES) + "/" + name; }

std::string fixture_address(const std::string& name, const std::string& file) {
  std::istringstream lines(read_file(fixture_path(file)));
  std::string key, value;
  while (lines >> key >> value) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no address for " << name << " in " << file;
  return {};
}

ScannedDump scan_dump(const std::string& dump) {
  ScannedDump scanned;
  size_t start = 0;
  while (start < dump.size()) {
    size_t end = dump.find('\n', start);
    if (end == std::string::npos) end = dump.size();
    std::string_view line(dump.data() + start, end - start);
    auto memsize = [&] {
      size_t at = line.rfind(R"("memsize":)");
      return at == std::string_view::npos ? 0 : std::stoull(std::string(line.substr(at + 10, 24)));
    };
    if (line.find(R"("type":"SHAPE")") != std::string_view::npos) {
      ++scanned.shapes;
      scanned.shape_memsize += memsize();
    } else if (line.starts_with(R"({"address":)")) {
      ++scanned.objects;
      scanned.memsize += memsize();
    }
    start = end + 1;
  }
  return scanned;
}

CommandResult run_memprof(const std::string& args) {
  return memprof::testing::run_command(
      {"/bin/sh", "-c",
       fmt::format("cd '{}' && exec '{}' {}", MEMPROF_HEAP_FIXTURES, MEMPROF_BINARY, args)});
}

void expect_golden(const std::string& name, const std::string& actual) {
  std::string path = std::string(MEMPROF_HEAP_GOLDEN) + "/" + name;
  const char* update = std::getenv("MEMPROF_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  EXPECT_EQ(read_file(path), actual) << "golden file " << path
                                     << " differs (MEMPROF_UPDATE_GOLDEN=1 rewrites it)";
}

std::string object_line(uint64_t address, const std::string& type, uint64_t klass,
                        const std::vector<uint64_t>& references, uint64_t memsize,
                        const std::string& extra) {
  std::string line = fmt::format(R"({{"address":"{:#x}", "type":"{}")", address, type);
  if (klass != 0) line += fmt::format(R"(, "class":"{:#x}")", klass);
  if (!references.empty()) {
    line += R"(, "references":[)";
    for (size_t i = 0; i < references.size(); ++i) {
      line += fmt::format(R"({}"{:#x}")", i == 0 ? "" : ", ", references[i]);
    }
    line += "]";
  }
  line += extra;
  line += fmt::format(R"(, "memsize":{}, "flags":{{"wb_protected":true}}}})", memsize);
  return line + "\n";
}

std::string root_line(const std::string& kind, const std::vector<uint64_t>& references) {
  std::string line = fmt::format(R"({{"type":"ROOT", "root":"{}", "references":[)", kind);
  for (size_t i = 0; i < references.size(); ++i) {
    line += fmt::format(R"({}"{:#x}")", i == 0 ? "" : ", ", references[i]);
  }
  return line + "]}\n";
}

}  // namespace memprof::heap::testing
