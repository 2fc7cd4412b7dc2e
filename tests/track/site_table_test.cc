#include "core/track/site_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace memprof::track {
namespace {

TEST(SiteTable, ReservedSites) {
  SiteTable sites;
  EXPECT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites.file(SiteTable::kUnknownSite), "(unknown)");
  EXPECT_EQ(sites.line(SiteTable::kUnknownSite), 0);
  EXPECT_EQ(sites.file(SiteTable::kInternalSite), "(memprof)");
  EXPECT_EQ(sites.intern(nullptr, 12), SiteTable::kUnknownSite);
}

TEST(SiteTable, InternsByContentNotPointer) {
  SiteTable sites;
  char a[] = "/app/a.rb";
  std::string b = "/app/a.rb";
  uint32_t s1 = sites.intern(a, 3);
  EXPECT_EQ(sites.intern(a, 3), s1);          // same pointer, same line
  EXPECT_EQ(sites.intern(b.c_str(), 3), s1);  // other pointer, same content
  uint32_t s2 = sites.intern(a, 4);
  EXPECT_NE(s1, s2);
  EXPECT_EQ(sites.file(s2), "/app/a.rb");
  EXPECT_EQ(sites.line(s2), 4);
  EXPECT_EQ(sites.size(), 4u);
  EXPECT_EQ(sites.file_count(), 3u);
}

TEST(SiteTable, ReusedPointerWithNewContentIsANewFile) {
  // The runtime frees a path string and the same memory holds another name: the cached
  // pointer must not be trusted.
  SiteTable sites;
  char buffer[32];
  std::strcpy(buffer, "/app/old.rb");
  uint32_t old_site = sites.intern(buffer, 10);
  std::strcpy(buffer, "/app/new.rb");
  uint32_t new_site = sites.intern(buffer, 10);
  EXPECT_NE(old_site, new_site);
  EXPECT_EQ(sites.file(new_site), "/app/new.rb");
  // A shorter name that is a prefix of the cached one.
  std::strcpy(buffer, "/app/new");
  uint32_t prefix_site = sites.intern(buffer, 10);
  EXPECT_EQ(sites.file(prefix_site), "/app/new");
  EXPECT_EQ(sites.file(old_site), "/app/old.rb");
}

}  // namespace
}  // namespace memprof::track
