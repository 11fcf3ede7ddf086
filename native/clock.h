// The wall clock of the analysis: the steps' and the session Runs' milliseconds (ItemResult timings).
#pragma once

#include <chrono>

namespace catcomfort {

using Clock = std::chrono::steady_clock;

inline double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace catcomfort
