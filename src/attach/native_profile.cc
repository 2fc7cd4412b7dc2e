#include "attach/native_profile.h"

#include <chrono>
#include <map>

namespace memprof::attach {
namespace {

// Frames shared between samples: a native frame by its address, a Ruby line by its text.
class FrameTable {
 public:
  explicit FrameTable(profile::StackProfile& profile) : profile_(profile) {}

  uint32_t native(uint64_t address, const SiteName& name) {
    auto [it, fresh] = by_address_.try_emplace(address, 0);
    // Address 0 stands for the sites beyond the table: its text says so.
    if (fresh)
      it->second = add({.function = address == 0 ? name.site : name.short_function,
                        .system_name = address == 0 ? "" : name.function,
                        .library = name.library,
                        .file = name.source.file,
                        .line = name.source.line,
                        .address = address});
    return it->second;
  }
  uint32_t ruby(const std::string& file, uint32_t line, const std::string& text) {
    auto [it, fresh] = by_text_.try_emplace(text, 0);
    if (fresh) it->second = add({.function = text, .library = "ruby", .file = file, .line = line});
    return it->second;
  }

 private:
  uint32_t add(profile::Frame frame) {
    profile_.frames.push_back(std::move(frame));
    return static_cast<uint32_t>(profile_.frames.size() - 1);
  }
  profile::StackProfile& profile_;
  std::map<uint64_t, uint32_t> by_address_;
  std::map<std::string, uint32_t> by_text_;
};

int64_t signed_count(uint64_t value) { return static_cast<int64_t>(std::min<uint64_t>(value, INT64_MAX)); }

}  // namespace

profile::StackProfile native_stack_profile(const native::NativeSnapshot& snapshot, FrameNamer& names,
                                           std::string title, double seconds) {
  profile::StackProfile out;
  out.title = std::move(title);
  out.duration_nanos = static_cast<int64_t>(seconds * 1e9);
  out.time_nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count() -
      out.duration_nanos;
  FrameTable frames(out);
  for (const native::SiteRow& site : snapshot.sites) {
    profile::Sample& sample = out.samples.emplace_back();
    if (site.frames.empty()) {
      sample.frames.push_back(frames.native(0, names(0)));  // the sites beyond the table
    } else {
      for (uint64_t address : site.frames) sample.frames.push_back(frames.native(address, names(address)));
    }
    if (std::string line = ruby_line_of(snapshot, site); !line.empty())
      sample.frames.push_back(frames.ruby(snapshot.ruby_files[site.ruby_file], site.ruby_line, line));
    sample.alloc_objects = signed_count(site.allocations);
    sample.alloc_space = signed_count(site.allocated_bytes);
    sample.inuse_objects = signed_count(site.live_blocks);
    sample.inuse_space = signed_count(site.live_bytes);
  }
  return out;
}

}  // namespace memprof::attach
