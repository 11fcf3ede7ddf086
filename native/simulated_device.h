// A simulated accelerator, for benchmarks and tests only: a session Run takes the time its device
// profile gives for its stage and batch size instead of running the network. Only
// catcomfort_bench.node can switch it on (src/native/addon.ts, CATCOMFORT_BENCH_SIMULATE); the
// service's catcomfort.node has no entry point that does. The calling pool thread waits the
// profile's host part, then the Run waits for one of the device's streams and holds it for the
// device part, so Runs queue on the device as they would on one GPU. Waits sleep: two cores can
// drive what sixteen would. Outputs are a real Run's, recorded once (session.cc).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "clock.h"

namespace catcomfort {

// One stage's cost by batch size: points ascending in batch, linear between them, and past the
// last point growing as between the last two (flat with one point).
struct StageCost {
  std::vector<int64_t> batches;
  std::vector<double> hostMs;    // the calling thread's part of a Run (copies, launches, sync)
  std::vector<double> deviceMs;  // the device's own part, on one stream
  double HostMs(int64_t batch) const;
  double DeviceMs(int64_t batch) const;
};

struct DeviceProfile {
  std::string name;
  int streams = 1;  // Runs the device executes at once
  // One image's decoding and detector preprocessing on one core of the machine played: what a
  // simulated decode waits instead (Pipeline::Simulate with `decode`).
  double decodeHostMs = 0;
  StageCost detector;
  StageCost classifier;
};

struct DeviceStats {
  uint64_t runs = 0;
  double busyMs = 0;     // time with at least one stream busy
  double elapsedMs = 0;  // since the device was set
  int streams = 0;
};

class SimulatedDevice {
 public:
  explicit SimulatedDevice(DeviceProfile profile);
  const DeviceProfile& Profile() const { return profile_; }
  // One Run of `cost` at `batch`: waits its host part, then its device part on a free stream.
  void Run(const StageCost& cost, int64_t batch);
  // One image's simulated decode: waits the profile's decodeHostMs.
  void Decode() const;
  DeviceStats Stats() const;

 private:
  void Acquire();
  void Release();

  const DeviceProfile profile_;
  const Clock::time_point since_ = Clock::now();
  mutable std::mutex mutex_;
  std::condition_variable freed_;
  int busyStreams_ = 0;
  Clock::time_point busySince_{};
  Clock::duration busy_{};
  std::atomic<uint64_t> runs_{0};
};

// The process's simulated device; null unless SetSimulatedDevice was called (bench addon only).
const SimulatedDevice* CurrentSimulatedDevice();
// Sets it once per process; a second call with another profile name throws.
SimulatedDevice& SetSimulatedDevice(DeviceProfile profile);

}  // namespace catcomfort
