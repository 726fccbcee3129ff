#include "threadpool/threadpool.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "os/cpu_count.h"
#include "os/spin.h"

namespace etnp {
namespace {
// A worker spins this long for the next region before it sleeps: long enough to bridge the gap
// between back-to-back calls (a sleeping worker costs the next region a wake-up of ~30 us),
// short enough not to burn a core for long after the last call (pthreadpool spins similarly).
constexpr std::chrono::microseconds kSpinTime{1000};
constexpr std::chrono::microseconds kSpinAlone{20};  // spinning without yielding the core
// The caller, its share done, waits for workers still inside the region: pause this many times,
// then yield between checks (a worker preempted mid-chunk needs the core more than the spinner).
constexpr int kWaitSpins = 2048;
inline void cpu_relax() { os::cpu_relax(); }
// True on pool workers and on a caller while it runs its share: a nested parallel_for runs inline.
thread_local bool t_in_region = false;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  nthreads_ = num_threads < 1 ? 1 : num_threads;
  ranges_.reset(new Range[nthreads_]);
  for (int i = 1; i < nthreads_; i++) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

// Own range first, then the others' in turn. A chunk is claimed by a compare-exchange on the
// range's `next`, so owner and thieves never take the same items; chunks shrink with what is left.
void ThreadPool::run_ranges(int self) {
  const std::function<void(int64_t, int64_t)>& fn = *job_;
  const int64_t grain = grain_;
  for (int k = 0; k < nthreads_; k++) {
    Range& r = ranges_[(self + k) % nthreads_];
    const int64_t end = r.end;
    int64_t b = r.next.load(std::memory_order_relaxed);
    while (b < end) {
      const int64_t c = std::max(grain, (end - b) / 4);
      if (r.next.compare_exchange_weak(b, b + c, std::memory_order_relaxed)) {
        fn(b, std::min(end, b + c));
        b = r.next.load(std::memory_order_relaxed);
      }
    }
  }
}

// The next open region's state (not `seen`), or 0 when the pool stops.
uint64_t ThreadPool::wait_for_region(uint64_t seen) {
  auto start = std::chrono::steady_clock::now();
  uint64_t last = seen;
  for (unsigned i = 1;; i++) {
    uint64_t s = state_.load(std::memory_order_acquire);
    if (s != seen && (s & 1)) return s;
    if (stop_.load(std::memory_order_relaxed)) return 0;
    cpu_relax();
    if (i % 64 == 0) {
      // a region opened and closed meanwhile (the caller did all of it alone) shows the pool is
      // in use: the spin starts over rather than going to sleep, which would cost every later
      // region a wake-up (a futex call, ~7 us on a VM)
      if (s != last) {
        last = s;
        start = std::chrono::steady_clock::now();
      }
      const auto spun = std::chrono::steady_clock::now() - start;
      if (spun > kSpinTime) break;
      // past the first stretch, give the core to anything else runnable on it now and then: on an
      // idle core the yield returns at once (the spin goes on), on a busy one the spinner stops
      // taking time from the work (or this pool's caller) sharing the core - on a loaded machine
      // two-thread runs were 2x slower than one thread without it
      if (spun > kSpinAlone) std::this_thread::yield();
    }
  }
  std::unique_lock<std::mutex> l(mu_);
  sleepers_.fetch_add(1);  // seq_cst, then the state is read: a publisher sees us or we see it
  uint64_t s = 0;
  cv_.wait(l, [&] {
    s = state_.load();
    return stop_.load() || (s != seen && (s & 1));
  });
  sleepers_.fetch_sub(1);
  return stop_.load() ? 0 : s;
}

void ThreadPool::worker_loop(int self) {
  t_in_region = true;
  uint64_t seen = 0;
  for (uint64_t s; (s = wait_for_region(seen)) != 0; seen = s) {
    active_.fetch_add(1);  // seq_cst: the caller's close and this registration are ordered
    if (state_.load() == s) {  // still open: the job and ranges are this region's
      try {
        run_ranges(self);
      } catch (...) {  // handed to the caller, which rethrows it once the region is closed
        std::lock_guard<std::mutex> g(error_mu_);
        if (!error_) error_ = std::current_exception();
        for (int t = 0; t < nthreads_; t++) ranges_[t].next.store(ranges_[t].end, std::memory_order_relaxed);
      }
    }
    active_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int nt = num_threads();
  if (nt == 1 || n <= grain || t_in_region) {
    fn(0, n);
    return;
  }
  job_ = &fn;
  grain_ = grain;
  error_ = nullptr;  // (left over when the caller's own share threw last time)
  for (int t = 0; t < nt; t++) {  // contiguous shares
    ranges_[t].next.store(n * t / nt, std::memory_order_relaxed);
    ranges_[t].end = n * (t + 1) / nt;
  }
  const uint64_t open = state_.load(std::memory_order_relaxed) + 1;  // closed states are even
  state_.store(open);  // seq_cst: then sleepers_ is read (see wait_for_region)
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> g(mu_); }  // a sleeper is now waiting, or will see the state
    cv_.notify_all();
  }
  // Close the region and wait for registered workers even when fn throws on this thread.
  struct Close {
    ThreadPool* p;
    uint64_t closed;
    ~Close() {
      t_in_region = false;
      p->state_.store(closed);  // seq_cst: a worker registering from now on backs off
      for (int i = 0; p->active_.load() != 0; i++) {
        if (i < kWaitSpins) cpu_relax();
        else std::this_thread::yield();
      }
      p->job_ = nullptr;
    }
  };
  {
    Close close{this, open + 1};
    t_in_region = true;
    run_ranges(0);
  }
  if (error_) {  // a worker's exception (the caller's own propagated before reaching here)
    std::exception_ptr e;
    std::swap(e, error_);
    std::rethrow_exception(e);
  }
}

// The physical cores this process may use (affinity mask, cgroup quota): see os/cpu_count.h.
int physical_cores() { return os::usable_cores(); }

}  // namespace etnp
