#include "threadpool/threadpool.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace etnp {
namespace {
constexpr int kSpin = 4000;  // pause iterations (~50-200 us) before blocking
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  nthreads_ = num_threads < 1 ? 1 : num_threads;
  ranges_.reset(new Range[nthreads_]);
  for (int i = 1; i < nthreads_; i++) workers_.emplace_back([this, i] { worker_loop(i); });
}

// Own range first, then the others' in turn; every range is consumed by fetch_add on its
// `next`, so owner and thieves never take the same chunk.
void ThreadPool::run_ranges(int self, const std::function<void(int64_t, int64_t)>& fn, int64_t chunk) {
  for (int k = 0; k < nthreads_; k++) {
    Range& r = ranges_[(self + k) % nthreads_];
    for (int64_t b; (b = r.next.fetch_add(chunk, std::memory_order_relaxed)) < r.end;) fn(b, std::min(r.end, b + chunk));
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int self) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t chunk;
    for (int i = 0; i < kSpin && generation_.load(std::memory_order_acquire) == seen &&
                    !stop_.load(std::memory_order_relaxed);
         i++)
      cpu_relax();
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_.load() || generation_.load() != seen; });
      if (stop_) return;
      seen = generation_.load();
      job = job_;
      chunk = chunk_;
      if (!job) continue;  // woke after that region already finished
      active_++;
    }
    run_ranges(self, *job, chunk);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int nt = num_threads();
  if (nt == 1 || n <= grain) {
    fn(0, n);
    return;
  }
  int64_t chunk = std::max(grain, (n + nt * 4 - 1) / (nt * 4));
  {
    std::lock_guard<std::mutex> g(mu_);
    job_ = &fn;
    chunk_ = chunk;
    for (int t = 0; t < nt; t++) {  // contiguous shares, in whole chunks where possible
      int64_t b = n * t / nt, e = n * (t + 1) / nt;
      ranges_[t].next.store(b, std::memory_order_relaxed);
      ranges_[t].end = e;
    }
    generation_++;
  }
  cv_.notify_all();
  run_ranges(0, fn, chunk);
  for (int i = 0; i < kSpin && active_.load(std::memory_order_acquire) != 0; i++) cpu_relax();
  std::unique_lock<std::mutex> l(mu_);
  done_cv_.wait(l, [&] { return active_.load() == 0; });
  job_ = nullptr;
}

int physical_cores() {
  // Count distinct (physical id, core id) pairs; fall back to hardware_concurrency.
  std::ifstream f("/proc/cpuinfo");
  std::set<std::pair<std::string, std::string>> cores;
  std::string line, phys = "0";
  while (std::getline(f, line)) {
    auto val = [&] { auto p = line.find(':'); return p == std::string::npos ? std::string() : line.substr(p + 1); };
    if (line.rfind("physical id", 0) == 0) phys = val();
    else if (line.rfind("core id", 0) == 0) cores.insert({phys, val()});
  }
  int n = (int)cores.size();
  if (n <= 0) n = (int)std::thread::hardware_concurrency();
  return n > 0 ? n : 1;
}

}  // namespace etnp
