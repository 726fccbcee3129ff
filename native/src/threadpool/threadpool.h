// A small fork-join thread pool: parallel_for splits [0, n) into one contiguous range per
// thread (the caller is thread 0), each eaten from its front in shrinking chunks (a quarter of
// what is left, at least `grain`); a thread that finishes its own range takes chunks from the
// others' (work stealing). Contiguous ranges keep cache affinity across consecutive regions over
// the same data (a layer's output rows are mostly read back by the thread that wrote them);
// shrinking chunks make the threads finish together.
//
// Hand-off without locks: the caller publishes a region by storing an odd `state_` (generation
// * 2 + 1); a worker that sees it registers in `active_`, checks the state is still the one it
// saw, and runs. The caller, once every range is empty, closes the region (even state) and waits
// for `active_` to drain; a worker that registered after the close backs off without touching
// the region. Workers spin between regions (a model runs many short regions back to back, and
// calls follow each other) for up to 1 ms (yielding the core now and then after the first 20 us,
// so a loaded machine's other work is not starved), then sleep on a condition variable; the
// caller notifies only when someone sleeps.
// One pool per Runtime; calls are serialised by the Runtime, so one region runs at a time. A
// parallel_for from inside a region (a worker, or the caller's own share) runs inline. An
// exception thrown by fn on any thread ends the region early (remaining chunks are dropped) and
// is rethrown by parallel_for on the caller.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
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
  void run_ranges(int self);
  uint64_t wait_for_region(uint64_t seen);
  struct alignas(64) Range {  // one thread's share of the current region
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::unique_ptr<Range[]> ranges_;
  int nthreads_ = 1;
  std::vector<std::thread> workers_;
  // the region: written by the caller before it publishes the state
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t grain_ = 1;
  alignas(64) std::atomic<uint64_t> state_{0};  // generation * 2 + 1 while a region is open
  alignas(64) std::atomic<int> active_{0};      // workers inside the current region
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::mutex error_mu_;
  std::exception_ptr error_;  // the first exception a worker's share threw in the current region
};

int physical_cores();

}  // namespace etnp
