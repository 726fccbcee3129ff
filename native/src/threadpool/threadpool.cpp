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
  for (int i = 1; i < num_threads; i++) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n, chunk;
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
      n = n_;
      chunk = chunk_;
      if (!job) continue;  // woke after that region already finished
      active_++;
    }
    for (int64_t b; (b = next_.fetch_add(chunk)) < n;) (*job)(b, std::min(n, b + chunk));
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
    n_ = n;
    chunk_ = chunk;
    next_.store(0);
    generation_++;
  }
  cv_.notify_all();
  for (int64_t b; (b = next_.fetch_add(chunk)) < n;) fn(b, std::min(n, b + chunk));
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
