// Objects and symbols of other processes: fixture targets (PIE, non-PIE, static), a real ruby, and
// the error cases (gone, not allowed).
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "core/proc/loaded_objects.h"
#include "core/proc/maps.h"
#include "core/proc/symbol_index.h"
#include "proc/subprocess.h"

namespace memprof::proc {
namespace {

using memprof::testing::ChildProcess;
using memprof::testing::run_command;

// Addresses the target prints about itself: "ready <function> <main> <data>".
struct TargetAddresses {
  uint64_t function = 0, main = 0, data = 0;
};

TargetAddresses read_ready_line(ChildProcess& child) {
  std::istringstream line(child.read_line());
  std::string ready;
  TargetAddresses addresses;
  line >> ready >> std::hex >> addresses.function >> addresses.main >> addresses.data;
  EXPECT_EQ(ready, "ready");
  return addresses;
}

uint64_t only_address(const SymbolIndex& index, std::string_view name) {
  auto found = index.find(name);
  EXPECT_EQ(found.size(), 1u) << name;
  return found.empty() ? 0 : found.front().address;
}

class RemoteTarget : public ::testing::TestWithParam<const char*> {};

TEST_P(RemoteTarget, SymbolsAtTheAddressesTheProcessUses) {
  ChildProcess child({GetParam()});
  ASSERT_TRUE(child.started());
  TargetAddresses expected = read_ready_line(child);

  auto objects = process_objects(child.pid());
  ASSERT_TRUE(objects.ok()) << objects.message();
  bool is_static = std::string(GetParam()) == TARGET_STATIC;
  // A static program has no loader and so no link_map: its objects come from the maps.
  EXPECT_EQ(objects->source, is_static ? ObjectSource::kMaps : ObjectSource::kLinkMap);
  ASSERT_FALSE(objects->objects.empty());
  EXPECT_TRUE(objects->objects.front().is_main);
  EXPECT_EQ(objects->objects.front().path, std::filesystem::canonical(GetParam()).string());
  EXPECT_EQ(std::count_if(objects->objects.begin(), objects->objects.end(),
                          [](const LoadedObject& o) { return o.is_vdso; }),
            1);

  auto index = SymbolIndex::for_process(child.pid());
  ASSERT_TRUE(index.ok()) << index.message();
  EXPECT_TRUE(index->warnings().empty()) << index->warnings().front();
  EXPECT_EQ(only_address(*index, "proc_target_function"), expected.function);
  EXPECT_EQ(only_address(*index, "main"), expected.main);
  // The executable refers to the library's variable through a copy relocation: both define it,
  // and the first definition in load order (the executable's copy) is the one the process uses.
  auto data = index->find("proc_target_data");
  ASSERT_EQ(data.size(), is_static ? 1u : 2u);
  EXPECT_EQ(data.front().address, expected.data);
  EXPECT_TRUE(data.front().object->object.is_main);

  auto inside = index->lookup(expected.function + 1);
  ASSERT_TRUE(inside.has_value());
  ASSERT_NE(inside->symbol, nullptr);
  EXPECT_EQ(inside->symbol->name, "proc_target_function");
  EXPECT_EQ(inside->offset, 1u);
  std::string object = is_static ? std::filesystem::canonical(GetParam()).string() : TARGET_LIB;
  EXPECT_EQ(inside->object->object.path, object);
}

INSTANTIATE_TEST_SUITE_P(Variants, RemoteTarget,
                         ::testing::Values(TARGET_PIE, TARGET_NOPIE, TARGET_STATIC));

// dlopen("./lib.so") leaves the loader a relative name, which names nothing once the process has
// moved to another directory (and named a file under memprof's root before). The object is
// named by its path from the root, and its symbols are found. Before: no symbols for it, and
// `memprof native` charged its leaks to "?".
TEST(RemoteTargetRelative, LibraryDlopenedByARelativePath) {
  const std::filesystem::path library = std::filesystem::canonical(TARGET_LIB);
  ChildProcess child({"sh", "-c", "cd \"$1\" && exec \"$2\" \"./$3\"", "sh", library.parent_path().string(),
                      TARGET_DLOPEN, library.filename().string()});
  ASSERT_TRUE(child.started());
  std::istringstream line(child.read_line());
  std::string ready;
  uint64_t function = 0;
  line >> ready >> std::hex >> function;
  ASSERT_EQ(ready, "ready");

  auto objects = process_objects(child.pid());
  ASSERT_TRUE(objects.ok()) << objects.message();
  EXPECT_EQ(std::count_if(objects->objects.begin(), objects->objects.end(),
                          [&](const LoadedObject& o) { return o.path == library.string(); }),
            1);
  auto index = SymbolIndex::for_process(child.pid());
  ASSERT_TRUE(index.ok()) << index.message();
  EXPECT_TRUE(index->warnings().empty()) << index->warnings().front();
  EXPECT_EQ(only_address(*index, "proc_target_function"), function);
  auto inside = index->lookup(function + 1);
  ASSERT_TRUE(inside.has_value());
  ASSERT_NE(inside->symbol, nullptr);
  EXPECT_EQ(inside->symbol->name, "proc_target_function");
  EXPECT_EQ(inside->object->object.path, library.string());
}

// A deployment replaced the program after the process started: the file is gone, the process
// still runs it. Its symbols come from /proc/PID/exe.
TEST(RemoteTargetDeleted, ExecutableDeletedAfterStart) {
  std::string copy = ::testing::TempDir() + "memprof_deleted_target_" + std::to_string(::getpid());
  std::filesystem::copy_file(TARGET_PIE, copy, std::filesystem::copy_options::overwrite_existing);
  ChildProcess child({copy});
  ASSERT_TRUE(child.started());
  TargetAddresses expected = read_ready_line(child);
  std::filesystem::remove(copy);
  auto index = SymbolIndex::for_process(child.pid());
  ASSERT_TRUE(index.ok()) << index.message();
  EXPECT_EQ(only_address(*index, "main"), expected.main);
  EXPECT_EQ(only_address(*index, "proc_target_function"), expected.function);
  EXPECT_EQ(index->objects().front().object.path, copy + " (deleted)");
}

// A ruby that has started and is sleeping; skipped when the machine has no ruby.
class RubyProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    child_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{"ruby", "-e", "STDOUT.puts 'ready'; STDOUT.flush; sleep"});
    if (!child_->started()) GTEST_SKIP() << "ruby is not installed";
    if (child_->read_line() != "ready") GTEST_SKIP() << "ruby did not start";
  }

  // The executable mapping of libruby in the child.
  std::optional<MapEntry> libruby_text() const {
    auto maps = read_maps(child_->pid());
    EXPECT_TRUE(maps.ok()) << maps.message();
    if (!maps.ok()) return std::nullopt;
    for (const auto& entry : *maps) {
      if (entry.executable && entry.path.find("/libruby") != std::string::npos) return entry;
    }
    return std::nullopt;
  }

  std::unique_ptr<ChildProcess> child_;
};

TEST_F(RubyProcess, RbNewobjIsInsideLibruby) {
  auto text = libruby_text();
  if (!text) GTEST_SKIP() << "this ruby is not linked against a shared libruby";
  auto index = SymbolIndex::for_process(child_->pid());
  ASSERT_TRUE(index.ok()) << index.message();
  auto found = index->find("rb_newobj");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(text->contains(found.front().address));
  EXPECT_NE(found.front().object->object.path.find("/libruby"), std::string::npos);
}

#ifdef MEMPROF_CLI
TEST_F(RubyProcess, CliPrintsRbNewobjInsideLibruby) {
  auto text = libruby_text();
  if (!text) GTEST_SKIP() << "this ruby is not linked against a shared libruby";
  auto result = run_command({MEMPROF_CLI, "symbols", std::to_string(child_->pid()), "^rb_newobj$"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header, "ADDRESS                 SIZE  TYPE    NAME  OBJECT");
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_FALSE(std::getline(lines, header)) << "one symbol expected:\n" << result.out;
  std::istringstream fields(line);
  std::string address, size, type, name, object;
  fields >> address >> size >> type >> name >> object;
  EXPECT_TRUE(text->contains(std::stoull(address, nullptr, 16))) << line;
  EXPECT_EQ(type, "func");
  EXPECT_EQ(name, "rb_newobj");
  EXPECT_NE(object.find("/libruby"), std::string::npos) << object;
}
#endif

TEST(RemoteErrors, NoSuchProcess) {
  ChildProcess child({TARGET_PIE});
  ASSERT_TRUE(child.started());
  pid_t pid = child.pid();
  child.kill_and_wait();
  std::string expected = "no such process: " + std::to_string(pid);
  EXPECT_EQ(process_objects(pid).message(), expected);
  EXPECT_EQ(SymbolIndex::for_process(pid).message(), expected);
#ifdef MEMPROF_CLI
  auto result = run_command({MEMPROF_CLI, "symbols", std::to_string(pid)});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "memprof: " + expected + "\n");
#endif
}

// As an unprivileged user, another user's process cannot be read; the error says why. Needs root
// to switch users.
TEST(RemoteErrors, OtherUsersProcessIsRefusedWithTheReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop to another uid";
  pid_t target = ::getpid();
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    const uid_t nobody = 65534;
    std::string message = "could not drop privileges";
    if (::setgroups(0, nullptr) == 0 && ::setresgid(nobody, nobody, nobody) == 0 &&
        ::setresuid(nobody, nobody, nobody) == 0) {
      auto objects = process_objects(target);
      message = objects.ok() ? "allowed" : objects.message();
    }
    (void)!::write(pipe_fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buffer[1024];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0) message.append(buffer, n);
  ::close(pipe_fds[0]);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(message, fmt::format("cannot read the memory map of process {0}: permission denied: "
                                 "process {0} belongs to uid 0 and memprof runs as uid 65534 "
                                 "without CAP_SYS_PTRACE; run memprof as that user or as root",
                                 target));
}

}  // namespace
}  // namespace memprof::proc
