// Runtime: a thread pool and the mutex that serialises method execution.
#pragma once
#include <memory>
#include <mutex>

#include "threadpool/threadpool.h"

namespace etnp {

class Runtime {
 public:
  explicit Runtime(int num_threads) : pool_(num_threads) {}
  ThreadPool& pool() { return pool_; }
  std::mutex& mutex() { return mu_; }

 private:
  ThreadPool pool_;
  std::mutex mu_;
};

}  // namespace etnp
