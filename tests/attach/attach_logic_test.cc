// The parts of attaching that decide without a process: which groups are leak suspects, which
// extension goes into which Ruby, and how readings of several processes add up.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>

#include "agent/protocol.h"
#include "agent/stale_sockets.h"
#include "attach/duration.h"
#include "attach/installation.h"
#include "attach/interruption.h"
#include "attach/leak_rounds.h"
#include "attach/live_snapshot.h"
#include "attach/native_live.h"
#include "attach/native_snapshot_json.h"
#include "attach/program_identity.h"
#include "attach/top_screen.h"
#include "native/native_wire.h"

namespace memprof::attach {
namespace {

LiveSnapshot reading(std::vector<LiveGroup> groups) {
  LiveSnapshot snapshot;
  snapshot.groups = std::move(groups);
  return snapshot;
}

TEST(LeakRounds, OnlyGroupsThatGrewInEveryRoundAreSuspects) {
  std::vector<LiveSnapshot> rounds = {
      reading({{"app.rb", 1, "String", 10, 400}, {"app.rb", 2, "Array", 10, 400},
               {"cache.rb", 3, "Hash", 10, 400}}),
      reading({{"app.rb", 1, "String", 20, 800}, {"app.rb", 2, "Array", 5, 200},
               {"cache.rb", 3, "Hash", 50, 2000}}),
      reading({{"app.rb", 1, "String", 35, 1400}, {"app.rb", 2, "Array", 30, 1200},
               {"cache.rb", 3, "Hash", 50, 2000}}),
  };
  auto suspects = find_leak_suspects(rounds);
  ASSERT_EQ(suspects.size(), 1u);  // Array shrank once, the cache stopped growing
  EXPECT_EQ(suspects[0].key, "app.rb:1 String");
  EXPECT_EQ(suspects[0].growth_per_round, (std::vector<int64_t>{10, 15}));
  EXPECT_EQ(suspects[0].total_growth(), 25);
  EXPECT_EQ(suspects[0].live, 35u);
  EXPECT_EQ(suspects[0].bytes, 1400u);
}

TEST(LeakRounds, AGroupThatAppearsCountsFromZero) {
  auto suspects = find_leak_suspects({reading({}), reading({{"new.rb", 7, "String", 3, 120}})});
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].growth_per_round, (std::vector<int64_t>{3}));
}

TEST(LeakRounds, ACountThatOnlyFluctuatesGrowsInEveryRoundOnceInTheFactorialOfItsReadings) {
  // Every order of four distinct readings (3 rounds) of one site: only the increasing one makes
  // it a suspect, which is the 1 in 24 that `leaks` prints.
  std::vector<uint64_t> counts = {5, 6, 7, 8};
  size_t orders = 0;
  size_t suspected = 0;
  do {
    std::vector<LiveSnapshot> rounds;
    for (uint64_t count : counts) rounds.push_back(reading({{"app.rb", 36, "String", count, 40 * count}}));
    ++orders;
    suspected += find_leak_suspects(rounds).size();
  } while (std::next_permutation(counts.begin(), counts.end()));
  EXPECT_EQ(orders, 24u);
  EXPECT_EQ(suspected, 1u);
  EXPECT_EQ(fluctuation_odds(3), 24u);
  EXPECT_EQ(fluctuation_odds(1), 2u);
  EXPECT_EQ(fluctuation_odds(6), 5040u);
  EXPECT_EQ(fluctuation_odds(19), 2432902008176640000u);  // 20!
  EXPECT_EQ(fluctuation_odds(20), UINT64_MAX);             // 21! does not fit in 64 bits
}

TEST(LiveRows, GrowthIsAgainstTheEarlierReadingAndZeroWithoutOne) {
  LiveSnapshot before = reading({{"a.rb", 1, "String", 5, 200}, {"a.rb", 2, "String", 9, 360}});
  LiveSnapshot now = reading({{"a.rb", 1, "String", 8, 320}, {"a.rb", 2, "String", 4, 160}});
  auto rows = rows_of(now, &before, Grouping::kClass);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, "String");
  EXPECT_EQ(rows[0].count, 12u);
  EXPECT_EQ(rows[0].bytes, 480u);
  EXPECT_EQ(rows[0].growth, 12 - 14);
  EXPECT_EQ(rows_of(now, nullptr, Grouping::kClass)[0].growth, 0);
}

bool has_line_starting(const std::vector<std::string>& lines, std::string_view start) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line.starts_with(start); });
}

// `top --once --rows N` shows N rows below the headers, whether or not the keys line is there
// (it showed N+1 once that line was left out of --once).
TEST(TopScreen, MaxRowsCountsRowsNotHeaders) {
  LiveSnapshot now = reading({{"a.rb", 1, "String", 5, 200}, {"a.rb", 2, "Array", 4, 160},
                              {"a.rb", 3, "Hash", 3, 120}, {"a.rb", 4, "Object", 2, 80}});
  TopFrame frame{42, &now, nullptr};
  for (bool interactive : {false, true}) {
    TopSettings settings;
    settings.interactive = interactive;
    for (size_t rows : {1u, 3u}) {
      auto lines = render_top(frame, settings, 80, SIZE_MAX, rows);
      auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("LIVE") != std::string::npos; });
      ASSERT_NE(header, lines.end());
      EXPECT_EQ(static_cast<size_t>(lines.end() - header - 1), rows) << interactive;
    }
  }
}

// A row too wide for the screen keeps its Ruby line: a long call site (`top --native`) is cut at
// its end, not the line at its start ("...6 rb_gc_impl_malloc+0x4b (libruby.so.3.4)" before); a
// long path loses its start, the class stays whole.
TEST(TopScreen, ANarrowScreenKeepsTheRubyLineOfARow) {
  LiveSnapshot now = reading({{"nat.rb", 6, "rb_gc_impl_malloc+0x4b (libruby.so.3.4)", 5, 200},
                              {"/srv/app/vendor/bundle/ruby/3.4.0/gems/some-gem-1.2.3/lib/some/gem/file.rb", 12,
                               "String", 4, 160}});
  TopFrame frame{42, &now, nullptr};
  auto lines = render_top(frame, TopSettings{}, 60, SIZE_MAX);
  auto line_with = [&](std::string_view text) {
    return std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  auto native = line_with("nat.rb:6 rb_gc_impl_m");
  ASSERT_NE(native, lines.end()) << fmt::format("{}", fmt::join(lines, "\n"));
  EXPECT_TRUE(native->ends_with("...")) << *native;
  auto ruby = line_with("gem/file.rb:12 String");
  ASSERT_NE(ruby, lines.end()) << fmt::format("{}", fmt::join(lines, "\n"));
  EXPECT_EQ(native->size(), 60u);
  EXPECT_LE(ruby->size(), 60u);
}

// A path cut to fit starts at one of its directories: ".../json/common.rb:216 JSON::Ext::Parser",
// not "....1.0/json/common.rb:216" (a cut inside "3.1.0"), whatever the screen's width.
TEST(TopScreen, ACutPathStartsAtADirectory) {
  const std::string path = "/usr/lib/ruby/3.1.0/json/common.rb";
  LiveSnapshot now = reading({{path, 216, "JSON::Ext::Parser", 147, 172900}});
  TopFrame frame{42, &now, nullptr};
  size_t cut_at_directory = 0;
  for (size_t width = 50; width <= 90; ++width) {
    auto lines = render_top(frame, TopSettings{}, width, SIZE_MAX);
    auto row = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find(":216 ") != std::string::npos; });
    ASSERT_NE(row, lines.end()) << width << "\n" << fmt::format("{}", fmt::join(lines, "\n"));
    const size_t dots = row->find("...");
    if (dots == std::string::npos || dots > row->find(":216")) continue;
    const std::string shown = row->substr(dots + 3, row->find(":216") - dots - 3);
    ASSERT_TRUE(path.ends_with(shown)) << *row;
    if (shown.find('/') == std::string::npos) continue;  // narrower: the file name itself is cut
    ++cut_at_directory;
    const size_t at = path.size() - shown.size();
    EXPECT_TRUE(shown[0] == '/' || path[at - 1] == '/') << *row;
  }
  EXPECT_GT(cut_at_directory, 10u);
}

// `top --once` and `--json` read no keys: only the full screen lists them.
TEST(TopScreen, OnlyTheInteractiveScreenListsTheKeys) {
  LiveSnapshot before = reading({{"a.rb", 1, "String", 5, 200}});
  LiveSnapshot now = reading({{"a.rb", 1, "String", 8, 320}});
  now.time = 1;
  TopFrame frame{42, &now, &before};
  TopSettings settings;
  EXPECT_FALSE(has_line_starting(render_top(frame, settings, 80, 24), "keys:"));
  settings.interactive = true;
  EXPECT_TRUE(has_line_starting(render_top(frame, settings, 80, 24), "keys: c/l/b group"));
}

// `top --native` on a program without Ruby: rows by call site, not under an empty Ruby line.
TEST(TopScreen, MallocBlocksWithoutRubyLinesAreShownByCallSite) {
  native::NativeSnapshot snapshot;
  snapshot.ruby_files = {"", "(other files)"};
  native::SiteRow site;
  site.live_blocks = 3;
  site.live_bytes = 96;
  snapshot.sites.push_back(site);
  LiveSnapshot now = live_snapshot_of(snapshot, proc::SymbolIndex::build({}, 0, false), 1);
  EXPECT_FALSE(now.ruby_lines);
  auto rows = rows_of(now, nullptr, Grouping::kBoth);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, now.groups[0].class_name);  // the call site alone
  TopFrame frame{42, &now, nullptr};
  auto lines = render_top(frame, TopSettings{}, 80, 24);
  EXPECT_TRUE(has_line_starting(lines, "by call site, sorted by count")) << lines[2];

  snapshot.ruby_files.push_back("app.rb");
  snapshot.sites[0].ruby_file = 2;
  snapshot.sites[0].ruby_line = 7;
  now = live_snapshot_of(snapshot, proc::SymbolIndex::build({}, 0, false), 1);
  EXPECT_TRUE(now.ruby_lines);
  EXPECT_TRUE(has_line_starting(render_top(frame, TopSettings{}, 80, 24), "by Ruby line + call site"));
}

const std::vector<Extension> kExtensions = {
    {"/b/ruby/memprof.so", "3.1", "libruby-3.1.so.3.1"},
    {"/b/3.3-shared/memprof.so", "3.3", "libruby.so.3.3"},
    {"/b/3.3-static/memprof.so", "3.3", ""},
    {"/b/3.4-static/memprof.so", "3.4", ""},
};

TEST(ChooseExtension, SameMinorAndSameLibruby) {
  auto chosen = choose_extension(1, "3.3.8", RubyTarget{"/opt/ruby/lib/libruby.so.3.3.8"},
                                 kExtensions);
  ASSERT_TRUE(chosen.ok()) << chosen.message();
  EXPECT_EQ(chosen->path, "/b/3.3-shared/memprof.so");
}

TEST(ChooseExtension, AStaticRubyGetsOnlyAnExtensionThatLinksNoLibruby) {
  auto chosen = choose_extension(1, "3.3.1", RubyTarget{}, kExtensions);
  ASSERT_TRUE(chosen.ok()) << chosen.message();
  EXPECT_EQ(chosen->path, "/b/3.3-static/memprof.so");
  auto none = choose_extension(1, "3.1.4", RubyTarget{}, kExtensions);
  ASSERT_FALSE(none.ok());
}

TEST(ChooseExtension, ASharedRubyFallsBackToTheStaticBuildOfItsVersion) {
  auto chosen = choose_extension(1, "3.4.2", RubyTarget{"/usr/lib/libruby.so.3.4"}, kExtensions);
  ASSERT_TRUE(chosen.ok()) << chosen.message();
  EXPECT_EQ(chosen->path, "/b/3.4-static/memprof.so");
}

TEST(ChooseExtension, AnUnbuiltVersionIsOneSentenceListingWhatThereIs) {
  auto none = choose_extension(42, "3.2.2", RubyTarget{"/usr/lib/libruby.so.3.2"}, kExtensions);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(),
            "process 42 runs Ruby 3.2.2 (/usr/lib/libruby.so.3.2), and this memprof has no "
            "extension for it (it has: 3.1 (libruby-3.1.so.3.1), 3.3 (libruby.so.3.3), 3.3 "
            "(static), 3.4 (static)); build one (scripts/rubies, or `gem install memprof` with "
            "that Ruby)");
}

// Ruby writes a file name's bytes as the program gave them: a name that is not UTF-8 must not
// make the whole native snapshot unreadable (it did: "malformed native snapshot").
TEST(NativeSnapshotJson, RubyFileNamesThatAreNotUtf8AreKept) {
  native::NativeSnapshot snapshot;
  snapshot.ruby_files = {"", "(other files)", "caf\xe9.rb", "d\xc3\xa9j\xc3\xa0.rb", "cut\xe2\x82"};
  native::SiteRow site;
  site.return_address = 0x1000;
  site.frames = {0x1000, 0x2000};
  site.ruby_file = 2;
  site.ruby_line = 7;
  site.allocations = site.live_blocks = 3;
  snapshot.sites.push_back(site);
  auto view = parse_native_snapshot(native::encode_snapshot(snapshot, {}, false));
  ASSERT_TRUE(view.ok()) << view.message();
  std::vector<std::string> expected = {"", "(other files)", "caf\xc3\xa9.rb", "d\xc3\xa9j\xc3\xa0.rb",
                                       "cut\xc3\xa2\xc2\x82"};
  EXPECT_EQ(view->snapshot.ruby_files, expected);
  ASSERT_EQ(view->snapshot.sites.size(), 1u);
  EXPECT_EQ(view->snapshot.sites[0].ruby_line, 7u);
  EXPECT_EQ(view->snapshot.sites[0].frames, (std::vector<uintptr_t>{0x1000, 0x2000}));
}

// The collection at a Ruby process's end: asked for in the request, its time in the snapshot
// (absent while none ran), both read back as written.
TEST(NativeSnapshotJson, TheCollectionAtTheEndGoesBothWays) {
  native::NativeRequest request{.stack_depth = 4, .ruby_lines = true, .track_mmap = false, .gc_at_exit = true};
  auto decoded = native::decode_native_request(native::encode_native_request(request));
  ASSERT_TRUE(decoded.ok()) << decoded.message();
  EXPECT_TRUE(decoded->gc_at_exit);
  EXPECT_EQ(decoded->stack_depth, 4u);
  EXPECT_FALSE(native::decode_native_request("stack_depth 1\n")->gc_at_exit);  // an older CLI's
  auto collected = parse_native_snapshot(native::encode_snapshot({}, {}, true, 12.5));
  ASSERT_TRUE(collected.ok()) << collected.message();
  EXPECT_DOUBLE_EQ(collected->exit_gc_ms, 12.5);
  EXPECT_LT(parse_native_snapshot(native::encode_snapshot({}, {}, true))->exit_gc_ms, 0);
}

// The children a process started during the session: read back as written, and 0 from an
// agent of an earlier memprof that does not write them (a process keeps that agent mapped).
TEST(NativeSnapshotJson, TheChildProcessesCountGoesBothWays) {
  auto counted = parse_native_snapshot(native::encode_snapshot({}, {}, false, -1, 3));
  ASSERT_TRUE(counted.ok()) << counted.message();
  EXPECT_EQ(counted->children, 3u);
  std::string older = native::encode_snapshot({}, {}, false);
  const std::string field = "\"children\":0,";
  ASSERT_NE(older.find(field), std::string::npos) << older;
  older.erase(older.find(field), field.size());
  auto without = parse_native_snapshot(older);
  ASSERT_TRUE(without.ok()) << without.message();
  EXPECT_EQ(without->children, 0u);
}

TEST(Duration, UnitsFromMillisecondsToHours) {
  using std::chrono::milliseconds;
  EXPECT_EQ(*parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(*parse_duration("10"), milliseconds(10'000));
  EXPECT_EQ(*parse_duration("1.5m"), milliseconds(90'000));
  EXPECT_EQ(*parse_duration("1h"), milliseconds(3'600'000));  // before: "not a duration"
  EXPECT_EQ(parse_duration("2d").message(), "'2d' is not a duration (e.g. 500ms, 10s, 2m, 1h)");
  EXPECT_EQ(parse_duration("-1s").message(), "'-1s' is not a duration (e.g. 500ms, 10s, 2m, 1h)");
  // Before: "inf" and "nan" went into an int64 conversion (undefined), "0" opened a window
  // "for 0" and made top and leaks poll without pause.
  EXPECT_EQ(parse_duration("inf").message(), "'inf' is not a duration (e.g. 500ms, 10s, 2m, 1h)");
  EXPECT_EQ(parse_duration("nan").message(), "'nan' is not a duration (e.g. 500ms, 10s, 2m, 1h)");
  EXPECT_EQ(parse_duration("0").message(), "'0' is too short: a duration is at least 1ms");
  EXPECT_EQ(parse_duration("0.4ms").message(), "'0.4ms' is too short: a duration is at least 1ms");
  EXPECT_EQ(parse_duration("1e300").message(), "'1e300' is too long: a duration is at most a year (8760h)");
  EXPECT_EQ(*parse_duration("8760h"), milliseconds(31'536'000'000));
}

// The output names a duration one way, however it was written: before, `leaks --interval 2`
// printed "all 4 rounds of 2", and --interval 0.5m "of 0.5m".
TEST(Duration, OutputTextInMillisecondsOrSeconds) {
  using std::chrono::milliseconds;
  EXPECT_EQ(duration_text(milliseconds(1)), "1 ms");
  EXPECT_EQ(duration_text(milliseconds(999)), "999 ms");
  EXPECT_EQ(duration_text(milliseconds(1000)), "1 s");
  EXPECT_EQ(duration_text(milliseconds(1500)), "1.5 s");
  EXPECT_EQ(duration_text(milliseconds(10'010)), "10.01 s");
  EXPECT_EQ(duration_text(*parse_duration("0.5m")), "30 s");
  EXPECT_EQ(duration_text(*parse_duration("2h")), "7200 s");
}

// A child running /bin/sleep with `ld_preload` as its whole environment, once its exec is done
// (its auxiliary vector is no longer this process's). The caller kills it by its pid.
pid_t sleeping_child(const std::string& ld_preload, ProgramIdentity& program) {
  const ProgramIdentity parent = read_program(::getpid());
  const pid_t child = ::fork();
  if (child == 0) {
    std::string variable = "LD_PRELOAD=" + ld_preload;
    char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("30"), nullptr};
    char* const envp[] = {variable.data(), nullptr};
    ::dup2(::open("/dev/null", O_WRONLY), 2);  // the loader's complaints about the made-up files
    ::execve("/bin/sleep", argv, envp);
    ::_exit(127);
  }
  for (int tries = 0; tries < 5000; ++tries) {
    program = read_program(child);
    if (program.known() && !program.same_program(parent)) break;
    ::usleep(1000);
  }
  return child;
}

// Whether the agent will be preloaded, from what the kernel gave the program at exec: the
// loader takes ':' and ' ' as separators and the agent by any path to a file of its name.
TEST(AgentPreloadable, TheAgentAnywhereInLdPreloadAndNowhereElse) {
  const std::string agent = "/opt/memprof/lib/libmemprof_agent.so";
  struct Case {
    std::string ld_preload;
    bool preloaded;
  };
  for (const Case& c : {Case{agent, true}, Case{"/usr/lib/libasan.so:" + agent, true},
                        Case{"libother.so " + agent + " libthird.so", true},
                        Case{"/elsewhere/libmemprof_agent.so", true}, Case{"", false},
                        Case{"/usr/lib/libother.so", false}, Case{agent + ".old", false},
                        Case{"/opt/memprof/lib/libmemprof_agent.so/x", false}}) {
    ProgramIdentity program;
    const pid_t child = sleeping_child(c.ld_preload, program);
    ASSERT_GT(child, 0);
    EXPECT_TRUE(program.known());
    EXPECT_NE(program.interpreter_base, 0u);  // /bin/sleep is dynamically linked
    EXPECT_FALSE(program.secure);
    const Status status = agent_preloadable(child, program, agent);
    if (c.preloaded) {
      EXPECT_TRUE(status.ok()) << c.ld_preload << ": " << status.message();
    } else {
      EXPECT_EQ(status.message(), "the program was started without memprof's agent in LD_PRELOAD (the command "
                                  "cleared or replaced it)")
          << c.ld_preload;
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
}

}  // namespace
}  // namespace memprof::attach

namespace memprof::agent {
namespace {

// A socket file bound at `path`; listening (kept open) when `listen` is set, else closed at
// once, as a process that ended leaves it. Its times set `age_seconds` back.
int bind_socket(const std::string& path, bool listen, int age_seconds) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << path;
  if (listen) {
    EXPECT_EQ(::listen(fd, 1), 0);
  }
  timespec times[2] = {{::time(nullptr) - age_seconds, 0}, {::time(nullptr) - age_seconds, 0}};
  EXPECT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  if (!listen) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(StaleSockets, OnlyOldSocketsNobodyListensOnAreRemoved) {
  char pattern[] = "/tmp/memprof-stale-test-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  bind_socket(dir + "/101.sock", false, 120);               // a process that ended: removed
  int live = bind_socket(dir + "/102.sock", true, 120);     // an agent that listens: kept
  bind_socket(dir + "/103.sock", false, 5);                 // maybe between bind and listen: kept
  ::close(::open((dir + "/104.sock").c_str(), O_CREAT | O_WRONLY, 0600));  // not a socket: kept
  EXPECT_EQ(remove_stale_sockets(dir), 1u);
  EXPECT_NE(::access((dir + "/101.sock").c_str(), F_OK), 0);
  for (const char* kept : {"/102.sock", "/103.sock", "/104.sock"})
    EXPECT_EQ(::access((dir + kept).c_str(), F_OK), 0) << kept;
  EXPECT_EQ(remove_stale_sockets(dir + "/none"), 0u);
  ::close(live);
  for (const char* name : {"/102.sock", "/103.sock", "/104.sock"}) ::unlink((dir + name).c_str());
  ::rmdir(dir.c_str());
}

// An agent's start sweeps at most once a minute: the children of a forking server each read
// the whole directory at their fork (per child, +3.6 ms of a 3 ms fork with 1,675 entries).
TEST(StaleSockets, AStartSweepsOnlyWhenNoneDidInTheLastMinute) {
  char pattern[] = "/tmp/memprof-stale-test-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  bind_socket(dir + "/301.sock", false, 120);
  EXPECT_EQ(sweep_stale_sockets(dir), 1u);  // no sweep yet: this one does
  bind_socket(dir + "/302.sock", false, 120);
  EXPECT_EQ(sweep_stale_sockets(dir), 0u);  // one swept a moment ago
  EXPECT_EQ(::access((dir + "/302.sock").c_str(), F_OK), 0);
  timespec long_ago[2] = {{::time(nullptr) - 61, 0}, {::time(nullptr) - 61, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir + "/.swept").c_str(), long_ago, 0), 0);
  EXPECT_EQ(sweep_stale_sockets(dir), 1u);  // a minute later: again
  EXPECT_NE(::access((dir + "/302.sock").c_str(), F_OK), 0);
  ::unlink((dir + "/.swept").c_str());
  ::rmdir(dir.c_str());
}

// A follow marker (protocol.h) holding `pid`, its times set `age_seconds` back.
void write_marker(const std::string& path, pid_t pid, int age_seconds) {
  const std::string text = std::to_string(pid);
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  timespec times[2] = {{::time(nullptr) - age_seconds, 0}, {::time(nullptr) - age_seconds, 0}};
  EXPECT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// Before: a CLI killed by SIGKILL left its follow marker in /tmp/memprof-UID for good.
TEST(StaleSockets, OnlyOldFollowMarkersOfEndedCLIsAreRemoved) {
  char pattern[] = "/tmp/memprof-stale-test-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  const pid_t ended = ::fork();  // a pid that no process has once reaped
  if (ended == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(ended, nullptr, 0), ended);
  write_marker(dir + "/201.follow", ended, 120);     // its CLI ended: removed
  write_marker(dir + "/202.follow", ::getpid(), 120);  // its CLI lives: kept
  write_marker(dir + "/203.follow", ended, 5);       // maybe being written: kept
  EXPECT_FALSE(follow_marker_names_live_cli(dir + "/201.follow"));
  EXPECT_TRUE(follow_marker_names_live_cli(dir + "/202.follow"));
  EXPECT_EQ(remove_stale_sockets(dir), 1u);
  EXPECT_NE(::access((dir + "/201.follow").c_str(), F_OK), 0);
  for (const char* kept : {"/202.follow", "/203.follow"})
    EXPECT_EQ(::access((dir + kept).c_str(), F_OK), 0) << kept;
  for (const char* name : {"/202.follow", "/203.follow"}) ::unlink((dir + name).c_str());
  ::rmdir(dir.c_str());
}

// A marker that is not a pid (cut by a full disk, written by something else) names no CLI:
// an exec'd program then runs at once instead of waiting for one.
TEST(FollowMarker, OnlyAPositiveDecimalPidNamesACli) {
  EXPECT_EQ(decode_follow_marker("4242"), 4242);
  EXPECT_EQ(decode_follow_marker(encode_follow_marker(::getpid())), ::getpid());
  for (std::string_view bad : {"", "0", "-1", "42x", " 42", "4242\n", "99999999999999999999"})
    EXPECT_EQ(decode_follow_marker(bad), 0) << bad;
}

}  // namespace
// A Ctrl-C while a notice is up is answered at once with its text on stderr (a trace whose
// start cannot be cut short said nothing until it had started); without one, with nothing.
TEST(Interruption, ACtrlCDuringANoticeSaysItsTextAtOnce) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC), 0);
  const int saved_stderr = ::dup(STDERR_FILENO);
  ::dup2(pipe_fds[1], STDERR_FILENO);
  bool requested = false;
  {
    attach::Interruption interruption;
    {
      attach::InterruptionNotice notice("memprof: stops once started\n");
      ::raise(SIGINT);
      requested = attach::Interruption::requested();
    }
    ::raise(SIGTERM);
  }
  ::dup2(saved_stderr, STDERR_FILENO);
  ::close(saved_stderr);
  char text[256] = {};
  const ssize_t n = ::read(pipe_fds[0], text, sizeof(text) - 1);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_TRUE(requested);
  EXPECT_EQ(std::string(text, n > 0 ? static_cast<size_t>(n) : 0), "memprof: stops once started\n");
}

}  // namespace memprof::agent
