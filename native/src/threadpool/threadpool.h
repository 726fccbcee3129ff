// A small fork-join thread pool: parallel_for splits [0, n) into one contiguous range per
// thread (the caller is thread 0), each eaten in chunks from its front; a thread that finishes
// its own range takes chunks from the others' (work stealing). Contiguous ranges keep cache
// affinity across consecutive regions over the same data (a layer's output rows are mostly read
// back by the thread that wrote them). One pool per Runtime; calls are serialised by the
// Runtime, so one parallel region runs at a time. Between regions workers spin briefly (a model
// runs many short regions back to back) before sleeping on the condvar.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace etnp {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  int num_threads() const { return nthreads_; }
  // fn(begin, end) over [0, n) in chunks of at least `grain` items.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int self);
  void run_ranges(int self, const std::function<void(int64_t, int64_t)>& fn, int64_t chunk);
  struct alignas(64) Range {  // one thread's share of the current region
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::unique_ptr<Range[]> ranges_;
  int nthreads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t chunk_ = 1;
  // written under mu_; atomic so that workers and the caller can spin on them without the lock
  std::atomic<int> active_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

int physical_cores();

}  // namespace etnp
