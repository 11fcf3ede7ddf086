// The simulated accelerator of native/simulated_device.h.
#include "simulated_device.h"

#include <stdexcept>
#include <thread>

namespace catcomfort {

namespace {

double Interpolate(const std::vector<int64_t>& batches, const std::vector<double>& ms, int64_t batch) {
  if (batches.empty()) return 0;
  if (batches.size() == 1) return ms[0];
  size_t hi = 1;
  while (hi + 1 < batches.size() && batches[hi] < batch) ++hi;
  const double x0 = static_cast<double>(batches[hi - 1]);
  const double x1 = static_cast<double>(batches[hi]);
  const double at = ms[hi - 1] + (ms[hi] - ms[hi - 1]) * (static_cast<double>(batch) - x0) / (x1 - x0);
  return at < 0 ? 0 : at;
}

void Wait(double ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

std::mutex g_deviceMutex;
// Never freed: pipelines and pool threads (perhaps asleep in it at exit) point into it.
SimulatedDevice* g_device = nullptr;
std::atomic<const SimulatedDevice*> g_current{nullptr};

}  // namespace

double StageCost::HostMs(int64_t batch) const { return Interpolate(batches, hostMs, batch); }
double StageCost::DeviceMs(int64_t batch) const { return Interpolate(batches, deviceMs, batch); }

SimulatedDevice::SimulatedDevice(DeviceProfile profile) : profile_(std::move(profile)) {
  if (profile_.streams < 1) throw std::runtime_error("a simulated device needs at least one stream");
}

void SimulatedDevice::Run(const StageCost& cost, int64_t batch) {
  runs_.fetch_add(1, std::memory_order_relaxed);
  Wait(cost.HostMs(batch));
  const double device = cost.DeviceMs(batch);
  if (device <= 0) return;
  Acquire();
  Wait(device);
  Release();
}

void SimulatedDevice::Decode() const { Wait(profile_.decodeHostMs); }

void SimulatedDevice::Acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  freed_.wait(lock, [this] { return busyStreams_ < profile_.streams; });
  if (busyStreams_++ == 0) busySince_ = Clock::now();
}

void SimulatedDevice::Release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--busyStreams_ == 0) busy_ += Clock::now() - busySince_;
  }
  freed_.notify_one();
}

DeviceStats SimulatedDevice::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point now = Clock::now();
  Clock::duration busy = busy_;
  if (busyStreams_ > 0) busy += now - busySince_;
  DeviceStats out;
  out.runs = runs_.load(std::memory_order_relaxed);
  out.busyMs = std::chrono::duration<double, std::milli>(busy).count();
  out.elapsedMs = std::chrono::duration<double, std::milli>(now - since_).count();
  out.streams = profile_.streams;
  return out;
}

const SimulatedDevice* CurrentSimulatedDevice() { return g_current.load(std::memory_order_acquire); }

SimulatedDevice& SetSimulatedDevice(DeviceProfile profile) {
  std::lock_guard<std::mutex> lock(g_deviceMutex);
  if (g_device) {
    if (g_device->Profile().name != profile.name) {
      throw std::runtime_error("this process already simulates device profile \"" + g_device->Profile().name + "\"");
    }
    return *g_device;
  }
  g_device = new SimulatedDevice(std::move(profile));
  g_current.store(g_device, std::memory_order_release);
  return *g_device;
}

}  // namespace catcomfort
