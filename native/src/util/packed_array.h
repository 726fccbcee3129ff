// PackedArray: the storage of a packed weight array (PackedB, PackedQ8, PackedQB4, PackedDwQ8).
// Either owns its elements (a std::vector, as packing makes them) or views elements that live
// elsewhere, read-only (a weight cache file mapped by the delegate that holds the array: see
// runtime/weight_cache.h). The kernels read it as they read a vector (data(), size(), [i]); only
// packing writes it, always into owned storage (resize / assign drop a view first).
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

namespace etnp {

template <typename T, typename Alloc = std::allocator<T>>
class PackedArray {
 public:
  using value_type = T;
  PackedArray() = default;

  const T* data() const { return view_ ? view_ : own_.data(); }
  // (packing writes owned storage; a view is never written: the mapping is read-only)
  T* data() { return view_ ? const_cast<T*>(view_) : own_.data(); }
  size_t size() const { return view_ ? view_n_ : own_.size(); }
  bool empty() const { return size() == 0; }
  // owned elements only: a view's bytes are the mapping's (DelegateMemory::mapped_weights)
  size_t capacity() const { return own_.capacity(); }
  const T& operator[](size_t i) const { return data()[i]; }
  T& operator[](size_t i) { return data()[i]; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  T* begin() { return data(); }
  T* end() { return data() + size(); }

  void resize(size_t n) { own_view_drop(), own_.resize(n); }
  void resize(size_t n, const T& v) { own_view_drop(), own_.resize(n, v); }
  void assign(size_t n, const T& v) { own_view_drop(), own_.assign(n, v); }
  template <typename It>
  void assign(It a, It b) { own_view_drop(), own_.assign(a, b); }
  void clear() { own_view_drop(), own_.clear(); }
  void swap(PackedArray& o) noexcept {
    own_.swap(o.own_);
    std::swap(view_, o.view_);
    std::swap(view_n_, o.view_n_);
  }

  // Views N elements at P (which outlive this array), dropping what it owned.
  void set_view(const T* p, size_t n) {
    std::vector<T, Alloc>().swap(own_);
    view_ = n ? p : nullptr;
    view_n_ = n;
  }
  bool is_view() const { return view_ != nullptr; }

 private:
  void own_view_drop() { view_ = nullptr, view_n_ = 0; }
  std::vector<T, Alloc> own_;
  const T* view_ = nullptr;
  size_t view_n_ = 0;
};

}  // namespace etnp
