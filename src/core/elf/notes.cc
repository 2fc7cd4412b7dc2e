// ELF notes (NT_GNU_BUILD_ID, SystemTap SDT probes) and .gnu_debuglink.
#include <elf.h>

#include <charconv>
#include <functional>

#include "core/elf/elf_file.h"

namespace memprof::elf {

namespace {

constexpr uint32_t kStapsdtNoteType = 3;  // NT_STAPSDT

struct Note {
  std::string_view owner;  // "GNU", "stapsdt", ... without the terminating NUL
  uint32_t type = 0;
  Bytes desc;
};

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Walks the notes packed in `data`; `alignment` is 4 or 8 (the section's or segment's own).
Status for_each_note(const std::string& file, Bytes data, uint64_t alignment,
                     const std::function<Status(const Note&)>& visit) {
  uint64_t offset = 0;
  while (offset < data.size()) {
    auto header = read_at<Elf64_Nhdr>(data, offset);
    if (!header) return err("{}: truncated note header", file);
    uint64_t name_offset = offset + sizeof(Elf64_Nhdr);
    uint64_t desc_offset = align_up(name_offset + header->n_namesz, alignment);
    uint64_t next = align_up(desc_offset + header->n_descsz, alignment);
    auto name = slice(data, name_offset, header->n_namesz);
    auto desc = slice(data, desc_offset, header->n_descsz);
    if (!name || !desc) return err("{}: truncated note", file);
    std::string_view owner(reinterpret_cast<const char*>(name->data()), name->size());
    if (!owner.empty() && owner.back() == '\0') owner.remove_suffix(1);
    MEMPROF_TRY_STATUS(visit(Note{owner, header->n_type, *desc}));
    offset = next;
  }
  return ok_status();
}

// Notes of every SHT_NOTE section, or of every PT_NOTE segment when there are none.
Status for_each_file_note(const ElfFile& file, const std::function<Status(const Note&)>& visit) {
  bool note_sections = false;
  for (const auto& section : file.sections()) {
    if (section.type != SHT_NOTE) continue;
    note_sections = true;
    MEMPROF_TRY(data, file.section_data(section));
    MEMPROF_TRY_STATUS(for_each_note(file.name(), data, section.addralign == 8 ? 8 : 4, visit));
  }
  // PT_NOTE segments cover the allocated note sections; only a file without section headers
  // (whose sections were rebuilt from PT_DYNAMIC, without notes) needs them.
  if (note_sections) return ok_status();
  for (const auto& segment : file.segments()) {
    if (segment.type != PT_NOTE) continue;
    auto data = slice(file.bytes(), segment.offset, segment.filesz);
    if (!data) return err("{}: truncated note segment", file.name());
    MEMPROF_TRY_STATUS(for_each_note(file.name(), *data, segment.align == 8 ? 8 : 4, visit));
  }
  return ok_status();
}

std::vector<UsdtArgument> parse_usdt_arguments(std::string_view text) {
  std::vector<UsdtArgument> arguments;
  while (!text.empty()) {
    size_t start = text.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    text.remove_prefix(start);
    size_t end = std::min(text.find(' '), text.size());
    std::string_view word = text.substr(0, end);
    text.remove_prefix(end);
    UsdtArgument argument{0, word};
    // "N@location": N is the size in bytes, negative for signed values. Without a valid "N@"
    // prefix the whole word is the location (size unknown, 0).
    size_t at = word.find('@');
    if (at != std::string_view::npos) {
      int size = 0;
      auto [end_ptr, ec] = std::from_chars(word.data(), word.data() + at, size);
      if (ec == std::errc() && end_ptr == word.data() + at) argument = {size, word.substr(at + 1)};
    }
    arguments.push_back(argument);
  }
  return arguments;
}

}  // namespace

Result<std::string> ElfFile::build_id() const {
  std::string hex;
  MEMPROF_TRY_STATUS(for_each_file_note(*this, [&](const Note& note) -> Status {
    if (note.owner != "GNU" || note.type != NT_GNU_BUILD_ID || !hex.empty()) return ok_status();
    for (unsigned char byte : note.desc) hex += fmt::format("{:02x}", byte);
    return ok_status();
  }));
  return hex;
}

Result<std::optional<DebugLink>> ElfFile::debuglink() const {
  const Section* link = section(".gnu_debuglink");
  if (link == nullptr) return std::optional<DebugLink>{};
  MEMPROF_TRY(data, section_data(*link));
  // File name, NUL, padding to a 4-byte boundary, then the CRC-32 of the debug file.
  auto file = cstring_at(data, 0);
  if (!file || file->empty()) return err("{}: bad .gnu_debuglink", name_);
  auto crc = read_at<uint32_t>(data, align_up(file->size() + 1, 4));
  if (!crc) return err("{}: truncated .gnu_debuglink", name_);
  return std::optional<DebugLink>(DebugLink{*file, *crc});
}

Result<std::vector<UsdtProbe>> ElfFile::usdt_probes() const {
  std::vector<UsdtProbe> probes;
  // Prelink may move the file after the notes were written; the distance between the recorded
  // and the actual address of .stapsdt.base is the correction every probe needs.
  const Section* base_section = section(".stapsdt.base");
  MEMPROF_TRY_STATUS(for_each_file_note(*this, [&](const Note& note) -> Status {
    if (note.owner != "stapsdt" || note.type != kStapsdtNoteType) return ok_status();
    // Descriptor: pc, base, semaphore (8 bytes each), then provider, name, arguments strings.
    auto pc = read_at<uint64_t>(note.desc, 0);
    auto base = read_at<uint64_t>(note.desc, 8);
    auto semaphore = read_at<uint64_t>(note.desc, 16);
    if (!pc || !base || !semaphore) return err("{}: truncated stapsdt note", name_);
    auto provider = cstring_at(note.desc, 24);
    auto probe_name = provider ? cstring_at(note.desc, 24 + provider->size() + 1) : std::nullopt;
    auto arguments = probe_name ? cstring_at(note.desc, 24 + provider->size() + probe_name->size() + 2)
                                : std::nullopt;
    if (!arguments) return err("{}: truncated stapsdt note", name_);
    UsdtProbe probe;
    probe.provider = *provider;
    probe.name = *probe_name;
    probe.base = *base;
    uint64_t adjust = base_section != nullptr ? base_section->addr - *base : 0;
    probe.pc = *pc + adjust;
    probe.semaphore = *semaphore != 0 ? *semaphore + adjust : 0;
    probe.arguments = *arguments;
    probe.parsed_arguments = parse_usdt_arguments(*arguments);
    probes.push_back(std::move(probe));
    return ok_status();
  }));
  return probes;
}

}  // namespace memprof::elf
