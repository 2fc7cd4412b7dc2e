// trace/call_format.h: whole ltrace lines. The expected lines marked "ltrace 0.7.3" are what
// Debian 12's ltrace printed for the same call (a test program calling functions of its own
// library, traced with -F and the prototype shown); the others say where memprof differs and why.
#include "trace/call_format.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace memprof::trace {
namespace {

// Memory the formatter may read: bytes placed at made-up addresses, nothing else readable. A
// region ends where its bytes end, so a string placed without its NUL runs into unreadable
// memory.
class FakeMemory {
 public:
  // All of a literal's characters, NULs written in it included, not its implicit terminator.
  template <size_t N>
  uint64_t place(const char (&literal)[N]) {
    return place(std::string_view(literal, N - 1));
  }
  uint64_t place(std::string_view bytes) {
    uint64_t address = next_;
    regions_[address] = std::string(bytes);
    next_ += 0x1000;
    return address;
  }
  uint64_t place_value(uint64_t value, size_t width = 8) {
    std::string bytes(width, '\0');
    std::memcpy(bytes.data(), &value, width);
    return place(bytes);
  }
  size_t read(uint64_t address, char* out, size_t size) const {
    auto it = regions_.upper_bound(address);
    if (it == regions_.begin()) return 0;
    --it;
    const std::string& bytes = it->second;
    uint64_t offset = address - it->first;
    if (offset >= bytes.size()) return 0;
    size_t n = std::min<size_t>(size, bytes.size() - offset);
    std::memcpy(out, bytes.data() + offset, n);
    return n;
  }

 private:
  std::map<uint64_t, std::string> regions_;
  uint64_t next_ = 0x55550000;
};

uint64_t bits_of(double value) { return std::bit_cast<uint64_t>(value); }
uint64_t bits_of(float value) { return std::bit_cast<uint32_t>(value); }

class CallFormatTest : public ::testing::Test {
 protected:
  // The call's registers: integer arguments, then floating-point ones, then the return.
  static CapturedCall call(std::vector<uint64_t> integers, std::vector<uint64_t> vectors = {},
                           std::optional<uint64_t> rax = 0, uint64_t xmm0 = 0) {
    CapturedCall captured;
    std::copy(integers.begin(), integers.end(), captured.arguments.integer.begin());
    std::copy(vectors.begin(), vectors.end(), captured.arguments.vector.begin());
    if (rax) captured.returned = ReturnRegisters{*rax, xmm0};
    return captured;
  }

  // ltrace's line for a call of the function `prototype_line` declares.
  std::string line(std::string_view prototype_line, const CapturedCall& captured) {
    auto set = parse_prototypes(prototype_line, "test.conf");
    if (!set.ok()) {
      ADD_FAILURE() << set.message();
      return "";
    }
    const Prototype& prototype = set->prototypes().begin()->second;
    return call_line(prototype.name, format_call(&prototype, captured, reader(), options_));
  }

  MemoryReader reader() const {
    return [this](uint64_t address, char* out, size_t size) { return memory_.read(address, out, size); };
  }

  FakeMemory memory_;
  FormatOptions options_;
};

TEST_F(CallFormatTest, StringsAreQuotedEscapedAndCutAtTheLimit) {
  const char* proto = "int pstr(string);";
  EXPECT_EQ(line(proto, call({memory_.place("SELECT 1\0")})),  // ltrace 0.7.3
            "pstr(\"SELECT 1\")                                 = 0");
  // Quotes are not escaped, as in ltrace; 32 characters, then "..." after the quote.
  EXPECT_EQ(line(proto, call({memory_.place("tab\there \"q\" back\\slash nl\n bell\a \x01\x7f\xff\x80 end\0")})),  // ltrace 0.7.3
            R"(pstr("tab\there "q" back\\slash nl\n bell"...)   = 0)");
  EXPECT_EQ(line(proto, call({memory_.place("0123456789012345678901234567890\0")})),  // ltrace 0.7.3
            R"(pstr("0123456789012345678901234567890")          = 0)");
  EXPECT_EQ(line(proto, call({memory_.place("012345678901234567890123456789012\0")})),  // ltrace 0.7.3
            R"(pstr("01234567890123456789012345678901"...)      = 0)");
  EXPECT_EQ(line(proto, call({0})), "pstr(nil)                                        = 0");  // ltrace 0.7.3
  EXPECT_EQ(line(proto, call({memory_.place("\0")})), R"(pstr("")                                         = 0)");
}

// ltrace 0.7.3 also writes "..." after a string of exactly 32 characters, which is complete;
// memprof writes it only when characters were left out.
TEST_F(CallFormatTest, AStringOfExactlyTheLimitIsNotMarkedAsCut) {
  EXPECT_EQ(line("int pstr(string);", call({memory_.place("01234567890123456789012345678901\0")})),
            R"(pstr("01234567890123456789012345678901")         = 0)");
}

TEST_F(CallFormatTest, TheLimitIsAnOption) {
  options_.string_limit = 5;
  EXPECT_EQ(line("int pstr(string);", call({memory_.place("hello world\0")})),
            R"(pstr("hello"...)                                 = 0)");
  EXPECT_EQ(line("int pstr(string);", call({memory_.place("hello\0")})),
            R"(pstr("hello")                                    = 0)");
}

TEST_F(CallFormatTest, UnprintableBytesAreOctalAndControlCharactersNamed) {
  EXPECT_EQ(line("string rets();", call({}, {}, memory_.place("ret\001val\0"))),  // ltrace 0.7.3
            R"(rets()                                           = "ret\001val")");
  EXPECT_EQ(line("int pstr(string);", call({memory_.place("\x0b\x0c\x0d\x08\x1b\xff\0")})),
            R"(pstr("\v\f\r\b\033\377")                         = 0)");
}

TEST_F(CallFormatTest, IntegersFollowTheirTypesWidthAndSign) {
  const uint64_t all_ones = ~uint64_t{0};
  EXPECT_EQ(line("long longs(long, ulong, uint, int, short, ushort);",  // ltrace 0.7.3
                 call({all_ones, all_ones, all_ones, all_ones, all_ones, all_ones}, {}, static_cast<uint64_t>(-5))),
            "longs(-1, 18446744073709551615, 4294967295, -1, -1, 65535) = -5");
  // An int is the low half of its register; a long takes the whole register (ltrace 0.7.3).
  EXPECT_EQ(line("int lng(int, long, char, short);", call({0x1ffffffff, 0xffffffff, 'x', 0})),
            "lng(-1, 4294967295, 'x', 0)                      = 0");
  EXPECT_EQ(line("int e(int);", call({5}, {}, 5)), "e(5)                                             = 5");
}

TEST_F(CallFormatTest, CharactersAreQuotedWithEscapes) {
  const char* proto = "char chars(char);";
  // ltrace 0.7.3, including the unescaped quote.
  EXPECT_EQ(line(proto, call({'a'}, {}, 'a')), "chars('a')                                       = 'a'");
  EXPECT_EQ(line(proto, call({'\n'}, {}, '\n')), R"(chars('\n')                                      = '\n')");
  EXPECT_EQ(line(proto, call({0}, {}, 0)), R"(chars('\0')                                      = '\0')");
  EXPECT_EQ(line(proto, call({0xffffffff}, {}, 0xffffffff)), R"(chars('\377')                                    = '\377')");
  EXPECT_EQ(line(proto, call({200}, {}, 200)), R"(chars('\310')                                    = '\310')");
  EXPECT_EQ(line(proto, call({'\''}, {}, '\'')), "chars(''')                                       = '''");
}

TEST_F(CallFormatTest, AddressesAreHexAndNullIsZero) {
  // ltrace 0.7.3: addr is a number, so NULL is 0; "nil" is for strings and pointers.
  EXPECT_EQ(line("addr addrs(addr, addr);", call({0, 0x7fff551821f0}, {}, 0)),
            "addrs(0, 0x7fff551821f0)                         = 0");
  EXPECT_EQ(line("void free(addr);", call({0x55d0c0de1000})), "free(0x55d0c0de1000)                             = <void>");
}

TEST_F(CallFormatTest, LensesChangeTheNotation) {
  EXPECT_EQ(line("octal octs(octal);", call({0755}, {}, 8)), "octs(0755)                                       = 010");
  EXPECT_EQ(line("octal octs(octal);", call({0}, {}, 8)), "octs(00)                                         = 010");
  EXPECT_EQ(line("bool(int) bools(bool(int), bool(int));", call({0, 5}, {}, 1)),
            "bools(false, true)                               = true");
  EXPECT_EQ(line("hex(int) hexs(hex(uint), hex(int));", call({255, ~uint64_t{0}}, {}, 0)),
            "hexs(0xff, 0xffffffff)                           = 0");
  EXPECT_EQ(line("int bv(bitvec(ulong), bitvec(int), bitvec(char));", call({0xb8, 0xfffffffe, 0})),
            "bv(<3-5,7>, ~<0>, <>)                            = 0");
  EXPECT_EQ(line("int hd(hide(int), int);", call({1, 2})), "hd(2)                                            = 0");
  // `void` among parameters is hide(int): it still takes its register.
  EXPECT_EQ(line("int vp(void, int);", call({3, 4}, {}, 1)), "vp(4)                                            = 1");
  EXPECT_EQ(line("int f(hex(double));", call({}, {bits_of(1.5)})), "f(0x1.8p+0)                                      = 0");
}

TEST_F(CallFormatTest, EnumsShowTheirNamesOrTheNumber) {
  const char* text = "typedef color = enum(RED=1, GREEN, BLUE=7);\nint en(color, color);";
  auto set = parse_prototypes(text, "test.conf");
  ASSERT_TRUE(set.ok()) << set.message();
  const Prototype* en = set->find("en");
  EXPECT_EQ(call_line("en", format_call(en, call({1, 7}), reader())), "en(RED, BLUE)                                    = 0");
  EXPECT_EQ(call_line("en", format_call(en, call({2, 5}), reader())), "en(GREEN, 5)                                     = 0");
}

TEST_F(CallFormatTest, DoublesComeFromVectorRegistersIndependentlyOfIntegers) {
  // dmix(7, 1.5, 8, 2.25, -3.0): 7 and 8 in rdi and rsi, the doubles in xmm0-xmm2 (ltrace 0.7.3).
  EXPECT_EQ(line("double dmix(int, double, long, double, double);",
                 call({7, 8}, {bits_of(1.5), bits_of(2.25), bits_of(-3.0)}, 0, bits_of(0.75))),
            "dmix(7, 1.500000, 8, 2.250000, -3.000000)        = 0.750000");
  // A float is the low 4 bytes of its register (ltrace 0.7.3).
  EXPECT_EQ(line("float flt(float, double);", call({}, {bits_of(1.5f), bits_of(2.5)}, 0, bits_of(2.5f))),
            "flt(1.500000, 2.500000)                          = 2.500000");
  EXPECT_EQ(line("double sqrt(double);", call({}, {bits_of(2.0)}, 0, bits_of(1.4142135623730951))),
            "sqrt(2.000000)                                   = 1.414214");
}

TEST_F(CallFormatTest, ArgumentsBeyondTheRegistersAreShownAsUnavailable) {
  EXPECT_EQ(line("int f(int, int, int, int, int, int, int, int);", call({1, 2, 3, 4, 5, 6})),
            "f(1, 2, 3, 4, 5, 6, ...)                         = 0");
  std::vector<uint64_t> doubles;
  for (int i = 0; i < 8; ++i) doubles.push_back(bits_of(i + 0.5));
  EXPECT_EQ(line("int g(double, double, double, double, double, double, double, double, double, int);",
                 call({9}, doubles)),
            "g(0.500000, 1.500000, 2.500000, 3.500000, 4.500000, 5.500000, 6.500000, 7.500000, ...) = 0");
}

TEST_F(CallFormatTest, FormatShowsTheArgumentsItsConversionsName) {
  const char* proto = "int fmt(format);";
  // ltrace 0.7.3
  EXPECT_EQ(line(proto, call({memory_.place("%s and %d and %f %f\0"), memory_.place("a\0"), 2},
                             {bits_of(3.5), bits_of(4.5)}, 1)),
            R"(fmt("%s and %d and %f %f", "a", 2, 3.500000, 4.500000) = 1)");
  // ltrace 0.7.3: %% takes nothing, %hhd is a char, %o octal, %#x hex, %e and %g doubles.
  EXPECT_EQ(line(proto, call({memory_.place("%5.2f|%-3d|%%|%lld|%hhd|%o|%#x|%e|%g\0"), 4, 5, 6, 8, 255},
                             {bits_of(3.14159), bits_of(1e10), bits_of(0.5)}, 1)),
            R"(fmt("%5.2f|%-3d|%%|%lld|%hhd|%o|%#x|%"..., 3.141590, 4, 5, '\006', 010, 0xff, 10000000000.000000, 0.500000) = 1)");
  // ltrace 0.7.3 read the seventh from the stack, which a hook does not record.
  EXPECT_EQ(line(proto, call({memory_.place("%d %d %d %d %d %d %d\0"), 1, 2, 3, 4, 5}, {}, 1)),
            R"(fmt("%d %d %d %d %d %d %d", 1, 2, 3, 4, 5, ...)  = 1)");
  const uint64_t buffer = 0x7fff551821f0;
  EXPECT_EQ(line(proto, call({memory_.place("%d %s %f %p %x %c %u %ld %lu %zu|\0"), static_cast<uint64_t>(-3),
                              memory_.place("str\0"), buffer, 255, 'z'},
                             {bits_of(1.25)}, 1)),
            R"(fmt("%d %s %f %p %x %c %u %ld %lu %zu"..., -3, "str", 1.250000, 0x7fff551821f0, 0xff, 'z', ...) = 1)");
}

TEST_F(CallFormatTest, FormatConversionsWithWidthsPrecisionsAndNull) {
  // ltrace 0.7.3 printed nil, 7, 8 the same; it cut "%.3s" at the width argument instead (7),
  // "%5s" at 5 characters (a minimum width), and read %hd onwards from the stack.
  EXPECT_EQ(line("int fmt2(format);", call({memory_.place("%s|%*d|%.3s|%5s|%hd|%lld|%n|%Lf\0"), 0, 7, 8,
                                            memory_.place("abcdef\0"), memory_.place("abcdefgh\0")},
                                           {}, 1)),
            R"(fmt2("%s|%*d|%.3s|%5s|%hd|%lld|%n|%Lf", nil, 7, 8, "abc", "abcdefgh", ...) = 1)");
  // A long double is passed on the stack: it and what follows are unavailable.
  EXPECT_EQ(line("int fmt3(format);", call({memory_.place("%Lf %d\0"), 1}, {bits_of(1.0)}, 1)),
            R"(fmt3("%Lf %d", ...)                              = 1)");
  EXPECT_EQ(line("int fmt4(int, format);", call({3, 0}, {}, 1)), "fmt4(3, nil)                                     = 1");
}

TEST_F(CallFormatTest, StringLengthsComeFromArgumentsOrTheReturnValue) {
  // ltrace 0.7.3
  EXPECT_EQ(line("int strarg2(string[arg2], long);", call({memory_.place("abcdefghij\0"), 4})),
            R"(strarg2("abcd", 4)                               = 0)");
  EXPECT_EQ(line("int strarg2(string[arg2], long);", call({memory_.place("abc\0"), 10})),
            R"(strarg2("abc", 10)                               = 0)");
  EXPECT_EQ(line("int strret(+string[retval], long);", call({memory_.place(std::string(100, 'x') + '\0'), 5}, {}, 3)),
            R"(strret("xxx", 5)                                 = 3)");
  EXPECT_EQ(line("long write(int, string3, ulong);", call({1, memory_.place("hello world\n"), 5}, {}, 5)),
            R"(write(1, "hello", 5)                             = 5)");
  // string[N] stops at a NUL; string(array(char, N)*) shows all N bytes (ltrace 0.7.3's rules).
  EXPECT_EQ(line("addr memcpy(addr,string(array(char, arg3)*),ulong);", call({0x1000, memory_.place("ab\0cd"), 5}, {}, 0x1000)),
            R"(memcpy(0x1000, "ab\0cd", 5)                      = 0x1000)");
  EXPECT_EQ(line("int f(string[5]);", call({memory_.place("ab\0cd")})), R"(f("ab")                                          = 0)");
  EXPECT_EQ(line("int f(string[arg2], int);", call({memory_.place("abc"), 0})), R"(f("", 0)                                         = 0)");
}

TEST_F(CallFormatTest, OutputParametersAreReadAfterTheReturn) {
  // snprintf(buf, 10, "%d-%s", 42, "x") = 4, formatted after the return when buf holds "42-x".
  EXPECT_EQ(line("int snprintf(+string2,ulong,format);",
                 call({memory_.place("42-x\0"), 10, memory_.place("%d-%s\0"), 42, memory_.place("x\0")}, {}, 4)),
            R"(snprintf("42-x", 10, "%d-%s", 42, "x")           = 4)");
  // Before the return, string[retval] has no length yet: it ends at its NUL.
  EXPECT_EQ(line("long read(int, +string[retval], ulong);", call({3, memory_.place("abcdef\0"), 100}, {}, std::nullopt)),
            R"(read(3, "abcdef", 100 <unfinished ...>)");
}

TEST_F(CallFormatTest, PointersShowWhatTheyPointTo) {
  // ltrace 0.7.3
  EXPECT_EQ(line("int ip(int*, long*);", call({memory_.place_value(42, 4), memory_.place_value(static_cast<uint64_t>(-7))})),
            "ip(42, -7)                                       = 0");
  EXPECT_EQ(line("int ip(int*, long*);", call({0, 0})), "ip(nil, nil)                                     = 0");
  const uint64_t string_address = memory_.place("via pointer\0");
  EXPECT_EQ(line("typedef mask = hex(uint);\nint sp(string*, mask*);",
                 call({memory_.place_value(string_address), memory_.place_value(255, 4)})),
            R"(sp("via pointer", 0xff)                          = 0)");
  EXPECT_EQ(line("int sc(string(char*));", call({memory_.place("via char*\0")})),  // ltrace 0.7.3
            R"(sc("via char*")                                  = 0)");
  EXPECT_EQ(line("int c(char*);", call({memory_.place("xyz")})), "c('x')                                           = 0");
}

// ltrace 0.7.3 printed "", 0 or whatever its failed read left for these; memprof shows the
// address, which is what a reader needs to recognise a bad pointer.
TEST_F(CallFormatTest, UnreadableMemoryShowsTheAddress) {
  EXPECT_EQ(line("int s1(string);", call({0x10})), "s1(0x10)                                         = 0");
  EXPECT_EQ(line("int ip(int*, long*);", call({0xdead0000, 8})), "ip(0xdead0000, 0x8)                              = 0");
  // A string that runs into unreadable memory shows what could be read (ltrace 0.7.3 the same).
  EXPECT_EQ(line("int s1(string);", call({memory_.place("edge!")})), R"(s1("edge!")                                      = 0)");
}

TEST_F(CallFormatTest, ReturnValues) {
  EXPECT_EQ(line("void v();", call({})), "v()                                              = <void>");  // ltrace 0.7.3
  EXPECT_EQ(line("string rnull();", call({}, {}, 0)), "rnull()                                          = nil");  // ltrace 0.7.3
  EXPECT_EQ(line("int f(int);", call({1}, {}, std::nullopt)), "f(1 <unfinished ...>");
}

TEST_F(CallFormatTest, WithoutAPrototypeLtraceGuessesFourArguments) {
  // ltrace 0.7.3: decimal within -10000..10000, hex beyond; the return value likewise.
  FormattedCall guessed = format_call(nullptr, call({1, static_cast<uint64_t>(-1), 10000, 10001, 5, 6}, {}, 0), reader());
  EXPECT_EQ(call_line("unknown6", guessed), "unknown6(1, -1, 10000, 0x2711)                   = 0");
  guessed = format_call(nullptr,
                        call({static_cast<uint64_t>(-10001), 0x7fffffffffff, 4294967295, static_cast<uint64_t>(-1), 0},
                             {}, static_cast<uint64_t>(-10001)),
                        reader());
  EXPECT_EQ(call_line("unk", guessed), "unk(0xffffffffffffd8ef, 0x7fffffffffff, 0xffffffff, -1) = 0xffffffffffffd8ef");
  options_.arguments_without_prototype = 7;
  guessed = format_call(nullptr, call({1, 2, 3, 4, 5, 6}, {}, std::nullopt), reader(), options_);
  EXPECT_EQ(call_line("all", guessed), "all(1, 2, 3, 4, 5, 6, ... <unfinished ...>");
}

TEST_F(CallFormatTest, LinesAlignTheReturnValueAtColumnFifty) {
  FormattedCall formatted{"1", "2"};
  EXPECT_EQ(call_line("f", formatted), "f(1)                                             = 2");
  EXPECT_EQ(call_line("f", formatted).find('='), 49u);
  EXPECT_EQ(call_line("f", formatted, 10), "f(1)     = 2");
  EXPECT_EQ(call_line("a_function_with_a_long_name_and_many_arguments", formatted),
            "a_function_with_a_long_name_and_many_arguments(1) = 2");
}

}  // namespace
}  // namespace memprof::trace
