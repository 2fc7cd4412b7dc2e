#include "ruby/heap_at_fork.h"

#include <cstring>
#include <span>
#include <string>
#include <unordered_set>

#include "core/util/stack_scrub.h"

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

void add_root(const char* category, VALUE object, void* data) {
  static_cast<std::vector<Root>*>(data)->push_back({category, object});
}

bool is_machine_context(const Root& root) { return std::strcmp(root.category, "machine_context") == 0; }

// One line per run of references of one category, as objspace's root_obj_i writes them.
std::string root_lines(const std::vector<Root>& roots) {
  std::string text;
  const char* category = nullptr;
  for (const Root& root : roots) {
    if (category != nullptr && std::strcmp(root.category, category) == 0) {
      text += ", ";
    } else {
      if (category != nullptr) text += "]}\n";
      text += R"({"type":"ROOT", "root":")";
      text += root.category;
      text += R"(", "references":[)";
      category = root.category;
    }
    append_address(text, root.object);
  }
  if (category != nullptr) text += "]}\n";
  return text;
}

void add_reference(VALUE object, void* data) {
  auto& array = *static_cast<std::string*>(data);
  if (array.size() > 1) array += ", ";
  append_address(array, object);
}

}  // namespace

void capture_heap_at_fork(const std::vector<VALUE>& objects, const void* app_frames_end) noexcept {
  try {
    track::ParentView view;
    std::vector<Root> roots;
    rb_objspace_reachable_objects_from_root(add_root, &roots);
    if (app_frames_end != nullptr) {
      const std::span<const uintptr_t> app_words = util::stack_words_above(app_frames_end);
      if (!app_words.empty()) drop_machine_context_roots_not_in(roots, app_words);  // else: unknown stack
    }
    view.root_lines = root_lines(roots);
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

void drop_machine_context_roots_not_in(std::vector<Root>& roots, std::span<const uintptr_t> words) {
  std::unordered_set<uintptr_t> unseen;
  for (const Root& root : roots)
    if (is_machine_context(root)) unseen.insert(static_cast<uintptr_t>(root.object));
  for (uintptr_t word : words) {
    if (unseen.empty()) break;
    unseen.erase(word);
  }
  std::erase_if(roots, [&](const Root& root) {
    return is_machine_context(root) && unseen.contains(static_cast<uintptr_t>(root.object));
  });
}

}  // namespace memprof::ruby
