// The addon's own worker pool: all decoding, preprocessing and session runs happen here.
// Tasks never let an exception escape (the worker catches everything).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace catcomfort {

class ThreadPool {
 public:
  explicit ThreadPool(size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // false when the pool was shut down (the task is dropped).
  bool Submit(std::function<void()> task);
  size_t Size() const { return workers_.size(); }
  // Drops queued tasks and joins the workers (running tasks finish first).
  void Shutdown();

 private:
  void WorkerLoop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Runs fn(i) for i in [0, n) on the calling thread and on up to pool.Size() helpers.
// The caller takes part, so a pool thread may call it without risking deadlock even when
// every other worker is busy. Rethrows the first exception thrown by fn after all ran.
void ParallelFor(ThreadPool& pool, size_t n, const std::function<void(size_t)>& fn);

}  // namespace catcomfort
