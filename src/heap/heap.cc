#include "heap/heap.h"

#include <algorithm>

#include <fmt/format.h>

namespace memprof::heap {

std::string_view Heap::own_name(ObjectId klass) const {
  auto found = class_names.find(klass);
  if (found != class_names.end()) return str(found->second);
  found = real_class_names.find(klass);
  return found == real_class_names.end() ? std::string_view{} : str(found->second);
}

std::string_view Heap::class_name(ObjectId id) const {
  ObjectId klass = class_of[id];
  return klass == kNoObject ? std::string_view{} : own_name(klass);
}

std::string Heap::class_label(ObjectId id) const {
  if (type[id] == ObjectType::kImemo) return fmt::format("(IMEMO:{})", str(detail[id]));
  std::string label;
  if (std::string_view name = class_name(id); !name.empty()) {
    label = name;
  } else if (class_of[id] != kNoObject) {
    label = fmt::format("#<Class:{:#x}>", address[class_of[id]]);
  }
  // A DATA object's class says little (Ruby's own tables are "Object"); its C struct says
  // what it is.
  if (type[id] == ObjectType::kData && detail[id] != 0) {
    return label.empty() ? fmt::format("(DATA:{})", str(detail[id]))
                         : fmt::format("{} ({})", label, str(detail[id]));
  }
  if (!label.empty()) return label;
  return fmt::format("({})", object_type_name(type[id]));
}

// The object a singleton class belongs to: among the class's references (Ruby writes its
// `__attached__` there), the one whose class it is; kNoObject when the dump does not say.
ObjectId Heap::attached_object(ObjectId singleton) const {
  for (ObjectId target : references(singleton))  // an IMEMO's "class" is its owner, not its class
    if (target != singleton && class_of[target] == singleton && type[target] != ObjectType::kImemo) return target;
  return kNoObject;
}

std::string Heap::object_label(ObjectId id) const { return object_label(id, 0); }

std::string Heap::object_label(ObjectId id, int depth) const {
  if (type[id] != ObjectType::kClass && type[id] != ObjectType::kModule) return class_label(id);
  if (auto found = class_names.find(id); found != class_names.end()) return std::string(str(found->second));
  const std::string anonymous = fmt::format("#<{}:{:#x}>", type[id] == ObjectType::kModule ? "Module" : "Class", address[id]);
  // A singleton class as Ruby names it (and the gem's stats): #<Class:Node> for a class's,
  // #<Class:#<Class:Node>> one level up, #<Class:#<Object>> for an ordinary object's.
  if (ObjectId attached = (flags[id] & kFlagSingleton) != 0 && depth < 8 ? attached_object(id) : kNoObject;
      attached != kNoObject) {
    const bool is_class = type[attached] == ObjectType::kClass || type[attached] == ObjectType::kModule;
    return fmt::format("#<Class:{}>", is_class ? object_label(attached, depth + 1) : "#<" + class_label(attached) + ">");
  }
  if (auto found = real_class_names.find(id); found != real_class_names.end()) {
    const std::string_view owner = str(found->second);
    const bool vowel = !owner.empty() && std::string_view("AEIOU").find(owner.front()) != std::string_view::npos;
    return fmt::format("{} (singleton class of {} {})", anonymous, vowel ? "an" : "a", owner);
  }
  return anonymous;
}

std::string Heap::site_label(ObjectId id) const {
  const Site& s = sites[site[id]];
  if (s.file == 0) return {};
  return fmt::format("{}:{}", str(s.file), s.line);
}

}  // namespace memprof::heap
