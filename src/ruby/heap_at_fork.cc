#include "ruby/heap_at_fork.h"

#include <cstring>
#include <string>

// Exported by every libruby (ext/objspace writes its dumps with them), declared only in Ruby's
// internal headers.
extern "C" {
void rb_objspace_reachable_objects_from_root(void (*func)(const char* category, VALUE, void*), void* data);
void rb_objspace_reachable_objects_from(VALUE object, void (*func)(VALUE, void*), void* data);
}

namespace memprof::ruby {
namespace {

std::optional<track::ParentView> g_view;

void append_address(std::string& text, VALUE object) { text += fmt::format("\"{:#x}\"", object); }

struct RootLines {
  std::string text;
  const char* category = nullptr;  // of the line being written (Ruby passes the same pointer)
};

// One line per run of references of one category, as objspace's root_obj_i writes them.
void add_root(const char* category, VALUE object, void* data) {
  auto& lines = *static_cast<RootLines*>(data);
  if (lines.category != nullptr && std::strcmp(category, lines.category) == 0) {
    lines.text += ", ";
  } else {
    if (lines.category != nullptr) lines.text += "]}\n";
    lines.text += R"({"type":"ROOT", "root":")";
    lines.text += category;
    lines.text += R"(", "references":[)";
    lines.category = category;
  }
  append_address(lines.text, object);
}

void add_reference(VALUE object, void* data) {
  auto& array = *static_cast<std::string*>(data);
  if (array.size() > 1) array += ", ";
  append_address(array, object);
}

}  // namespace

void capture_heap_at_fork(const std::vector<VALUE>& objects) noexcept {
  try {
    track::ParentView view;
    RootLines roots;
    rb_objspace_reachable_objects_from_root(add_root, &roots);
    if (roots.category != nullptr) roots.text += "]}\n";
    view.root_lines = std::move(roots.text);
    for (VALUE object : objects) {
      std::string array = "[";
      rb_objspace_reachable_objects_from(object, add_reference, &array);
      array += "]";
      view.references.emplace(static_cast<uintptr_t>(object), std::move(array));
    }
    g_view = std::move(view);
  } catch (...) {
    g_view.reset();  // out of memory: the dump shows the child's heap
  }
}

const std::optional<track::ParentView>& heap_at_fork() { return g_view; }

}  // namespace memprof::ruby
