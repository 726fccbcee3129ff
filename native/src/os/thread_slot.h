// ETNP_THREAD_LOCAL(Type, name): a per-thread object at block scope, as `thread_local Type name;`
// (value-initialised on the thread's first pass, destroyed when the thread exits). Every
// per-thread object that has a destructor (scratch vectors, strings) is declared this way;
// native_tests/check_portable.sh rejects a plain thread_local of any other than a scalar or a
// pointer.
// Why: with mingw-w64's GCC, thread_local storage is emulated (emutls). The storage is freed by one
// pthread key destructor and the object's destructor is registered as another; winpthreads runs
// them in no set order as a thread exits, so the destructor can read (and free) what the storage
// held after it was freed - a thread pool worker's exit crashed under Wine in _aligned_free
// (GCC bug 80816, mingw-w64 bug 527). There the object lives on the heap, held by a pthread key
// of its own whose destructor is handed the object: nothing is read from emulated storage at
// exit. Elsewhere (Linux, macOS, MSVC and clang-cl's native TLS, Clang for mingw) plain
// thread_local.
#pragma once

#if defined(__MINGW32__) && !defined(__clang__)
#include <pthread.h>

#include <cstdlib>

namespace etnp::os {

// One key per declaration (a function-local static: created on first use, never destroyed - it is
// trivially destructible, so nothing of it runs at process exit).
template <typename T>
class ThreadSlot {
 public:
  ThreadSlot() {
    if (pthread_key_create(&key_, [](void* p) { delete static_cast<T*>(p); }) != 0) std::abort();
  }
  T& get() {
    void* p = pthread_getspecific(key_);
    if (!p) {
      p = new T();
      pthread_setspecific(key_, p);
    }
    return *static_cast<T*>(p);
  }

 private:
  pthread_key_t key_;
};

}  // namespace etnp::os

#define ETNP_THREAD_LOCAL(Type, name)                  \
  static ::etnp::os::ThreadSlot<Type> name##_slot_; \
  Type& name = name##_slot_.get()
#else
#define ETNP_THREAD_LOCAL(Type, name) thread_local Type name {}
#endif
