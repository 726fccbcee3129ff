#include "delegates/backend.h"

namespace etnp {

const std::vector<Backend>& backends() {
  static const std::vector<Backend> b = {{"XnnpackBackend", &xnnpack_init}};
  return b;
}

const Backend* find_backend(const std::string& id) {
  for (auto& b : backends())
    if (id == b.id) return &b;
  return nullptr;
}

}  // namespace etnp
