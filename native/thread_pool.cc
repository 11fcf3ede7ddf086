#include "thread_pool.h"

#include <atomic>

#include <vips/vips.h>

namespace catcomfort {

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = 1;
  workers_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() { Shutdown(); }

bool ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void ThreadPool::Shutdown() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (auto& worker : workers_) {
    if (worker.joinable() && worker.get_id() != std::this_thread::get_id()) worker.join();
  }
  workers_.clear();
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      task();
    } catch (...) {
      // Tasks report their own failures; nothing may escape a pool thread.
    }
  }
  vips_thread_shutdown();  // frees libvips' per-thread buffers
}

namespace {

struct ForState {
  explicit ForState(size_t count, const std::function<void(size_t)>& f) : n(count), fn(f) {}
  const size_t n;
  const std::function<void(size_t)>& fn;  // lives in the caller's frame until done == n
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::condition_variable cv;
  size_t done = 0;
  std::exception_ptr error;

  void Drain() {
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      std::exception_ptr failure;
      try {
        fn(i);
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (failure && !error) error = failure;
      if (++done == n) cv.notify_all();
    }
  }
};

}  // namespace

void ParallelFor(ThreadPool& pool, size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1) {
    fn(0);
    return;
  }
  auto state = std::make_shared<ForState>(n, fn);
  size_t helpers = std::min(n - 1, pool.Size());
  for (size_t h = 0; h < helpers; ++h) {
    // A helper that starts after all indices were taken returns at once without touching fn.
    if (!pool.Submit([state] { state->Drain(); })) break;  // shut down: the caller does it all
  }
  state->Drain();
  std::unique_lock<std::mutex> lock(state->mutex);
  state->cv.wait(lock, [&] { return state->done == n; });
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace catcomfort
