// trace/prototype.h: every spelling of ltrace.conf(5) that memprof accepts, read back through
// describe(); every rejected line with its exact message; Debian 12's whole /etc/ltrace.conf.
#include "trace/prototype.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace memprof::trace {
namespace {

// The prototype `text` defines for `name`, in ltrace's syntax ("" and a test failure when the
// text does not parse or lacks it).
std::string parsed(std::string_view text, std::string_view name) {
  auto set = parse_prototypes(text, "protos.conf");
  if (!set.ok()) {
    ADD_FAILURE() << set.message();
    return "";
  }
  const Prototype* prototype = set->find(name);
  if (prototype == nullptr) {
    ADD_FAILURE() << "no prototype for " << name;
    return "";
  }
  return describe(*prototype);
}

// The one message a text of bad lines gives.
std::string rejection(std::string_view text) {
  auto set = parse_prototypes(text, "protos.conf");
  return set.ok() ? "(accepted)" : set.message();
}

TEST(PrototypeParser, ReadsTheBriefsExamples) {
  EXPECT_EQ(parsed("int mysql_real_query(addr,string,ulong);", "mysql_real_query"),
            "int mysql_real_query(addr, string, ulong)");
  EXPECT_EQ(parsed("void free(addr);", "free"), "void free(addr)");
  EXPECT_EQ(parsed("string getenv(string);", "getenv"), "string getenv(string)");
  EXPECT_EQ(parsed("int printf(format);", "printf"), "int printf(format)");
  EXPECT_EQ(parsed("long write(int,string[arg3],ulong);", "write"), "long write(int, string[arg3], ulong)");
  EXPECT_EQ(parsed("double sqrt(double);", "sqrt"), "double sqrt(double)");
  EXPECT_EQ(parsed("int snprintf(+string[arg2], ulong, format);", "snprintf"),
            "int snprintf(+string[arg2], ulong, format)");
}

TEST(PrototypeParser, ReadsEveryScalarType) {
  EXPECT_EQ(parsed("void f(int, uint, long, ulong, char, short, ushort, float, double, addr, file);", "f"),
            "void f(int, uint, long, ulong, char, short, ushort, float, double, addr, addr)");
  // memprof's additions: size_t and ssize_t as on x86-64, bool as C's one-byte bool.
  EXPECT_EQ(parsed("ssize_t f(size_t, bool);", "f"), "long f(ulong, bool(char))");
  // void* is addr, whatever the spacing.
  EXPECT_EQ(parsed("void * f(void*);", "f"), "addr f(addr)");
}

TEST(PrototypeParser, ReadsEveryStringSpelling) {
  EXPECT_EQ(parsed("int f(string, string[12], string[arg2], string[retval], string[zero], string[zero(arg1)]);", "f"),
            "int f(string, string[12], string[arg2], string[retval], string, string[arg1])");
  // ltrace's old stringN: string0 is string[retval], stringN string[argN].
  EXPECT_EQ(parsed("long f(+string0, string3, ulong);", "f"), "long f(+string[retval], string[arg3], ulong)");
  // string[arg0] is the return value too.
  EXPECT_EQ(parsed("long f(string[arg0]);", "f"), "long f(string[retval])");
  // The lens form: char* stops at the NUL; array(char, N)* shows exactly N bytes (memcpy).
  EXPECT_EQ(parsed("int f(string(char*));", "f"), "int f(string)");
  EXPECT_EQ(parsed("addr memcpy(addr,string(array(char, arg3)*),ulong);", "memcpy"),
            "addr memcpy(addr, string(array(char, arg3)*), ulong)");
  EXPECT_EQ(parsed("int f(string(array(char, zero(arg2))*), int);", "f"), "int f(string[arg2], int)");
  EXPECT_EQ(parsed("string2 getcwd(addr,ulong);", "getcwd"), "string[arg2] getcwd(addr, ulong)");
}

TEST(PrototypeParser, ReadsLenses) {
  EXPECT_EQ(parsed("octal umask(octal);", "umask"), "oct(int) umask(oct(int))");
  EXPECT_EQ(parsed("hex(uint) f(oct(long), octal(ushort), hex(int), hex(double), hex(addr));", "f"),
            "hex(uint) f(oct(long), oct(ushort), hex(int), hex(double), hex(addr))");
  EXPECT_EQ(parsed("bool(int) f(bitvec(ulong), hide(string), hide(double), bool(char));", "f"),
            "bool(int) f(bitvec(ulong), hide(string), hide(double), bool(char))");
}

TEST(PrototypeParser, ReadsPointersToWhatItSupports) {
  EXPECT_EQ(parsed("int getopt_long(int,addr,string,addr,int*);", "getopt_long"),
            "int getopt_long(int, addr, string, addr, int*)");
  // As in ltrace, a lens ends at its closing parenthesis: a pointer to hex(uint) needs a typedef.
  EXPECT_EQ(parsed("typedef mask = hex(uint);\nint f(long **, string*, +mask*);", "f"), "int f(long**, string*, +hex(uint)*)");
  EXPECT_EQ(rejection("int f(hex(uint)*);"), "protos.conf:1: expected ',' or ')' after a parameter, found '*' in 'int f(hex(uint)*);'");
}

TEST(PrototypeParser, ReadsEnumsWithAndWithoutValues) {
  EXPECT_EQ(parsed("int f(enum(A, B, C=7, D, E=-2));", "f"), "int f(enum(A=0, B=1, C=7, D=8, E=-2))");
  EXPECT_EQ(parsed("int f(enum[ushort](LOW=0x10, HIGH=010));", "f"), "int f(enum[ushort](LOW=16, HIGH=8))");
}

TEST(PrototypeParser, ExpandsTypedefsDefinedEarlier) {
  const char* text =
      "typedef signum = enum(SIGHUP=1, SIGINT=2);\n"
      "typedef sigset_t = bitvec(ulong);\n"
      "typedef length = size_t;\n"
      "int kill(int, signum);\n"
      "int sigemptyset(+sigset_t*);\n"
      "length strlen(string);\n";
  EXPECT_EQ(parsed(text, "kill"), "int kill(int, enum(SIGHUP=1, SIGINT=2))");
  EXPECT_EQ(parsed(text, "sigemptyset"), "int sigemptyset(+bitvec(ulong)*)");
  EXPECT_EQ(parsed(text, "strlen"), "ulong strlen(string)");
}

TEST(PrototypeParser, FollowsLtracesRulesForVoidParameters) {
  EXPECT_EQ(parsed("void bfd_init();", "bfd_init"), "void bfd_init()");
  EXPECT_EQ(parsed("int f(void);", "f"), "int f()");
  // A void among other parameters is an int that is not shown.
  EXPECT_EQ(parsed("int f(void, int);", "f"), "int f(hide(int), int)");
}

TEST(PrototypeParser, SkipsCommentsAndBlankLinesAndAcceptsLooseSpacing) {
  const char* text =
      "; ltrace.conf\n"
      "\n"
      "   ; indented comment\n"
      "# hash comment\n"
      "\t\n"
      "int open(string,int,octal);\t\t; WARNING: 3rd argument may not be there\n"
      "int rresvport (addr);\n"
      "int   SYS_close( int ) ;\r\n"
      "int no_semicolon(int)\n"
      "char *getmntent(addr);\n"
      "int memcpy@GLIBC_2.2.5(addr) # versioned\n";
  auto set = parse_prototypes(text, "protos.conf");
  ASSERT_TRUE(set.ok()) << set.message();
  EXPECT_EQ(set->size(), 6u);
  EXPECT_EQ(describe(*set->find("open")), "int open(string, int, oct(int))");
  EXPECT_EQ(describe(*set->find("rresvport")), "int rresvport(addr)");
  EXPECT_EQ(describe(*set->find("SYS_close")), "int SYS_close(int)");
  EXPECT_EQ(describe(*set->find("no_semicolon")), "int no_semicolon(int)");
  EXPECT_EQ(describe(*set->find("getmntent")), "char* getmntent(addr)");
  EXPECT_EQ(describe(*set->find("memcpy@GLIBC_2.2.5")), "int memcpy@GLIBC_2.2.5(addr)");
}

TEST(PrototypeParser, ALaterDefinitionReplacesAnEarlierOne) {
  auto set = parse_prototypes("int f(int);\nlong f(string);\n", "protos.conf");
  ASSERT_TRUE(set.ok()) << set.message();
  EXPECT_EQ(set->size(), 1u);
  EXPECT_EQ(describe(*set->find("f")), "long f(string)");
  EXPECT_EQ(set->find("f")->origin, "protos.conf:2");
}

TEST(PrototypeParser, MarksFormatAndOutputParameters) {
  auto set = parse_prototypes("int snprintf(+string[arg2], ulong, format);", "protos.conf");
  ASSERT_TRUE(set.ok()) << set.message();
  const Prototype& snprintf = *set->find("snprintf");
  ASSERT_EQ(snprintf.parameters.size(), 3u);
  EXPECT_TRUE(snprintf.parameters[0].is_output);
  EXPECT_FALSE(snprintf.parameters[1].is_output);
  EXPECT_TRUE(snprintf.parameters[2].is_format);
  EXPECT_EQ(snprintf.parameters[2].type.base, BaseType::kString);
}

TEST(PrototypeParser, NamesTheFileTheLineAndTheReason) {
  EXPECT_EQ(rejection("int f(strnig);"), "protos.conf:1: unknown type 'strnig' in 'int f(strnig);'");
  EXPECT_EQ(rejection("\n\n  int f(int, stringy);  "),
            "protos.conf:3: unknown type 'stringy' in 'int f(int, stringy);'");
  EXPECT_EQ(rejection("int f(array(int, 3)*);"),
            "protos.conf:1: array types are supported only as string(array(char, LENGTH)*) in 'int f(array(int, 3)*);'");
  EXPECT_EQ(rejection("int f(struct(int, int)*);"),
            "protos.conf:1: struct types are not supported in 'int f(struct(int, int)*);'");
  EXPECT_EQ(rejection("int f(int"), "protos.conf:1: expected ',' or ')' after a parameter, found end of line in 'int f(int'");
  EXPECT_EQ(rejection("int (int);"), "protos.conf:1: expected the function's name, found '(' in 'int (int);'");
  EXPECT_EQ(rejection("int f;"), "protos.conf:1: expected '(' after 'f', found ';' in 'int f;'");
  EXPECT_EQ(rejection("int f(int) junk"), "protos.conf:1: unexpected 'junk' after the definition in 'int f(int) junk'");
  EXPECT_EQ(rejection("int f(,);"), "protos.conf:1: expected a type, found ',' in 'int f(,);'");
}

TEST(PrototypeParser, RejectsWhatItCannotShowFaithfully) {
  EXPECT_EQ(rejection("int f(format, int);"), "protos.conf:1: 'format' must be the last parameter in 'int f(format, int);'");
  EXPECT_EQ(rejection("format f(int);"), "protos.conf:1: 'format' can only be a parameter in 'format f(int);'");
  EXPECT_EQ(rejection("int f(string[arg3], int);"),
            "protos.conf:1: 'arg3' names a parameter that f does not have (it has 2) in 'int f(string[arg3], int);'");
  EXPECT_EQ(rejection("int f(string[elt1]);"),
            "protos.conf:1: 'elt1' lengths refer to struct fields, which are not supported in 'int f(string[elt1]);'");
  EXPECT_EQ(rejection("int f(string[foo]);"),
            "protos.conf:1: unknown length 'foo' (expected N, argN, retval or zero) in 'int f(string[foo]);'");
  EXPECT_EQ(rejection("int f(hex(string));"), "protos.conf:1: hex() does not apply to 'string' in 'int f(hex(string));'");
  EXPECT_EQ(rejection("int f(bool(double));"), "protos.conf:1: bool() does not apply to 'double' in 'int f(bool(double));'");
  EXPECT_EQ(rejection("int f(hex int);"), "protos.conf:1: expected '(' after 'hex', found 'int' in 'int f(hex int);'");
  EXPECT_EQ(rejection("int f(string(int*));"),
            "protos.conf:1: string() needs char* or array(char, LENGTH)*, not 'int*' in 'int f(string(int*));'");
  EXPECT_EQ(rejection("int f(string(array(char, 6)));"),
            "protos.conf:1: string(array(char, N)) without '*' is an array inside a struct, which is not supported "
            "in 'int f(string(array(char, 6)));'");
  EXPECT_EQ(rejection("int f(enum(A=, B));"), "protos.conf:1: expected a number after 'A=', found ',' in 'int f(enum(A=, B));'");
  EXPECT_EQ(rejection("int f(enum[double](A));"),
            "protos.conf:1: enum[] needs a plain integer type, not 'double' in 'int f(enum[double](A));'");
}

TEST(PrototypeParser, ReportsTypedefProblemsAndTheLinesTheySpoil) {
  EXPECT_EQ(rejection("typedef = int;"), "protos.conf:1: expected the typedef's name, found '=' in 'typedef = int;'");
  EXPECT_EQ(rejection("typedef x = int;\ntypedef x = long;"),
            "protos.conf:2: redefinition of typedef 'x' in 'typedef x = long;'");
  EXPECT_EQ(rejection("typedef in_addr = struct(hex(uint));\nstring inet_ntoa(in_addr);"),
            "protos.conf:1: struct types are not supported in 'typedef in_addr = struct(hex(uint));'\n"
            "protos.conf:2: type 'in_addr' is unusable: its typedef at protos.conf:1 was rejected in "
            "'string inet_ntoa(in_addr);'");
}

TEST(PrototypeParser, KeepsTheGoodLinesOfAFileWithBadOnes) {
  PrototypeSet set;
  std::vector<std::string> problems = add_prototypes(set, "int good(int);\nint bad(strnig);\nvoid also_good();\n", "mixed.conf");
  EXPECT_EQ(problems, std::vector<std::string>{"mixed.conf:2: unknown type 'strnig' in 'int bad(strnig);'"});
  EXPECT_EQ(set.size(), 2u);
  EXPECT_NE(set.find("good"), nullptr);
  EXPECT_NE(set.find("also_good"), nullptr);
  EXPECT_EQ(set.find("bad"), nullptr);
}

// Debian 12's ltrace 0.7.3 file, from the ltrace package (scripts/install-deps installs it).
// Every line either parses or is rejected with its line number; the rejected ones are the struct
// typedefs and the lines that use them.
TEST(PrototypeParser, ReadsDebiansLtraceConf) {
  std::ifstream file("/etc/ltrace.conf");
  if (!file) GTEST_SKIP() << "/etc/ltrace.conf is absent: install Debian's ltrace package (scripts/install-deps)";
  std::stringstream text;
  text << file.rdbuf();
  const std::string contents = text.str();
  ASSERT_EQ(std::count(contents.begin(), contents.end(), '\n'), 543)
      << "not the /etc/ltrace.conf of Debian 12's ltrace 0.7.3-6.4: the counts below are for that file";

  PrototypeSet set;
  std::vector<std::string> problems = add_prototypes(set, contents, "/etc/ltrace.conf");
  EXPECT_EQ(set.size(), 430u);  // of the file's 441 prototype lines
  const std::vector<std::string> expected_problems = {
      "/etc/ltrace.conf:11: struct types are not supported in 'typedef in_addr = struct(hex(uint));'",
      "/etc/ltrace.conf:12: type 'in_addr' is unusable: its typedef at /etc/ltrace.conf:11 was rejected in "
      "'int inet_aton(string, +in_addr*);'",
      "/etc/ltrace.conf:15: type 'in_addr' is unusable: its typedef at /etc/ltrace.conf:11 was rejected in "
      "'string inet_ntoa(in_addr);'",
      "/etc/ltrace.conf:16: type 'in_addr' is unusable: its typedef at /etc/ltrace.conf:11 was rejected in "
      "'in_addr inet_makeaddr(hex(int), hex(int));'",
      "/etc/ltrace.conf:17: type 'in_addr' is unusable: its typedef at /etc/ltrace.conf:11 was rejected in "
      "'hex(uint) inet_lnaof(in_addr);'",
      "/etc/ltrace.conf:18: type 'in_addr' is unusable: its typedef at /etc/ltrace.conf:11 was rejected in "
      "'hex(uint) inet_netof(in_addr);'",
      "/etc/ltrace.conf:164: struct types are not supported in "
      "'typedef sigaction = struct(addr, sigset_t, hex(int), addr);'",
      "/etc/ltrace.conf:172: type 'sigaction' is unusable: its typedef at /etc/ltrace.conf:164 was rejected in "
      "'int sigaction(signum, sigaction*, +sigaction*);'",
      "/etc/ltrace.conf:424: struct types are not supported in "
      "'typedef mntent = struct(string, string, string, string, int, int);'",
      "/etc/ltrace.conf:425: type 'mntent' is unusable: its typedef at /etc/ltrace.conf:424 was rejected in "
      "'int addmntent(file, mntent*);'",
      "/etc/ltrace.conf:430: type 'mntent' is unusable: its typedef at /etc/ltrace.conf:424 was rejected in "
      "'mntent *getmntent(addr);'",
      "/etc/ltrace.conf:431: type 'mntent' is unusable: its typedef at /etc/ltrace.conf:424 was rejected in "
      "'mntent *getmntent_r(file, +mntent*, string, int);'",
      "/etc/ltrace.conf:432: type 'mntent' is unusable: its typedef at /etc/ltrace.conf:424 was rejected in "
      "'mntent *__getmntent_r(file, +mntent*, string, int);'",
      "/etc/ltrace.conf:433: type 'mntent' is unusable: its typedef at /etc/ltrace.conf:424 was rejected in "
      "'string hasmntopt(mntent*, string);'",
  };
  EXPECT_EQ(problems, expected_problems);

  // A sample of what the accepted lines mean.
  EXPECT_EQ(describe(*set.find("write")), "long write(int, string[arg3], ulong)");
  EXPECT_EQ(describe(*set.find("read")), "long read(int, +string[retval], ulong)");
  EXPECT_EQ(describe(*set.find("snprintf")), "int snprintf(+string[arg2], ulong, format)");
  EXPECT_EQ(describe(*set.find("memcpy")), "addr memcpy(addr, string(array(char, arg3)*), ulong)");
  EXPECT_EQ(describe(*set.find("open")), "int open(string, int, oct(int))");
  EXPECT_EQ(describe(*set.find("getcwd")), "string[arg2] getcwd(addr, ulong)");
  EXPECT_EQ(describe(*set.find("sigemptyset")), "int sigemptyset(+bitvec(ulong)*)");
  EXPECT_EQ(describe(*set.find("inet_addr")), "hex(uint) inet_addr(string)");
  EXPECT_EQ(describe(*set.find("_IO_getc")), "char _IO_getc(addr)");
  EXPECT_EQ(set.find("SYS_mmap"), nullptr);  // commented out in the file
}

}  // namespace
}  // namespace memprof::trace
