// Error type thrown inside the core and turned into an etnp_status at the C API boundary.
#pragma once
#include <new>
#include <stdexcept>
#include <string>

#include "etnp.h"

namespace etnp {

class Error : public std::runtime_error {
 public:
  Error(etnp_status code, std::string msg, std::string detail = "")
      : std::runtime_error(std::move(msg)), code_(code), detail_(std::move(detail)) {}
  etnp_status code() const { return code_; }
  const std::string& detail() const { return detail_; }

 private:
  etnp_status code_;
  std::string detail_;
};

[[noreturn]] inline void throw_load(const std::string& m) { throw Error(ETNP_ERR_PROGRAM_LOAD, m); }
// The status the C API returns for the exception being handled (runtime/c_api.cpp's guard); call
// it inside a catch block only.
inline etnp_status current_exception_status() {
  try {
    throw;
  } catch (const Error& e) {
    return e.code();
  } catch (const std::bad_alloc&) {
    return ETNP_ERR_EXECUTION;
  } catch (...) {
    return ETNP_ERR_INTERNAL;
  }
}

[[noreturn]] inline void throw_exec(const std::string& m) { throw Error(ETNP_ERR_EXECUTION, m); }

#define ETNP_CHECK_EXEC(cond, msg)                                   \
  do {                                                               \
    if (!(cond)) ::etnp::throw_exec(std::string(msg));               \
  } while (0)

}  // namespace etnp
