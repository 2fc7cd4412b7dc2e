// trace/printf_arguments.h: the arguments each conversion consumes, written as prototype types.
#include "trace/printf_arguments.h"

#include <gtest/gtest.h>

#include <string>

namespace memprof::trace {
namespace {

// "int, string[3], double" for the arguments of `format`; a '!' marks one passed on the stack.
std::string arguments_of(std::string_view format) {
  std::string text;
  for (const PrintfArgument& argument : printf_arguments(format)) {
    if (!text.empty()) text += ", ";
    text += describe(argument.type) + (argument.on_stack ? "!" : "");
  }
  return text;
}

TEST(PrintfArguments, TheBriefsConversions) {
  EXPECT_EQ(arguments_of("%d %s %f %p %x %c %u %ld %lu %zu"),
            "int, string, double, addr, hex(uint), char, uint, long, ulong, ulong");
}

TEST(PrintfArguments, SizesSignsAndNotations) {
  EXPECT_EQ(arguments_of("%hhd %hd %i %lld %jd %td %hhu %hu %llu"),
            "char, short, int, long, long, long, char, ushort, ulong");
  EXPECT_EQ(arguments_of("%o %lo %X %#hx"), "oct(uint), oct(ulong), hex(uint), hex(ushort)");
  EXPECT_EQ(arguments_of("%e %E %F %g %G %a %A"), "double, double, double, double, double, double, double");
  EXPECT_EQ(arguments_of("%C %S %n"), "char, string, addr");
}

TEST(PrintfArguments, WidthsAndPrecisions) {
  EXPECT_EQ(arguments_of("%5d %-08.3f %+ d %'d"), "int, double, int, int");
  EXPECT_EQ(arguments_of("%.3s %10s %.0s"), "string[3], string, string[0]");
  EXPECT_EQ(arguments_of("%*d %.*s %*.*f"), "int, int, int, string, int, int, double");
}

TEST(PrintfArguments, LongDoubleIsOnTheStack) {
  EXPECT_EQ(arguments_of("%Lf %Lg %f"), "double!, double!, double");
}

TEST(PrintfArguments, ConversionsWithoutArguments) {
  EXPECT_EQ(arguments_of("100%% done %m"), "");
  EXPECT_EQ(arguments_of("no conversions"), "");
  EXPECT_EQ(arguments_of("%y%d"), "int");  // an unknown conversion takes nothing
  EXPECT_EQ(arguments_of("trailing %"), "");
  EXPECT_EQ(arguments_of("%l"), "");
}

}  // namespace
}  // namespace memprof::trace
