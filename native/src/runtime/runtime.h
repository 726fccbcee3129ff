// Runtime: a thread pool and the mutex that serialises method execution.
// The mutex is recursive: a Python-defined operator runs inside a method call (mutex held) and
// may trigger Python's garbage collector, which destroys other methods of the same Runtime on
// that thread (etnp_method_destroy takes the mutex). Running a method of the same Runtime from
// inside an operator is refused by the Python layer, not by this lock.
#pragma once
#include <memory>
#include <mutex>

#include "threadpool/threadpool.h"

namespace etnp {

class Runtime {
 public:
  explicit Runtime(int num_threads) : pool_(num_threads) {}
  ThreadPool& pool() { return pool_; }
  std::recursive_mutex& mutex() { return mu_; }

 private:
  ThreadPool pool_;
  std::recursive_mutex mu_;
};

}  // namespace etnp
