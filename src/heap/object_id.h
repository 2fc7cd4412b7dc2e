// Objects of a loaded dump are numbered densely from 0 in file order.
#pragma once

#include <cstdint>
#include <limits>

namespace memprof::heap {

using ObjectId = uint32_t;
inline constexpr ObjectId kNoObject = std::numeric_limits<ObjectId>::max();

}  // namespace memprof::heap
