#include "profile/profile_file.h"

#include <span>

#include "report/output_file.h"

namespace memprof::profile {

Status write_profile_file(const std::string& path, const Result<std::string>& bytes) {
  if (!bytes.ok()) return bytes.error();
  return report::write_output_file(
      path, std::span(reinterpret_cast<const unsigned char*>(bytes->data()), bytes->size()));
}

}  // namespace memprof::profile
