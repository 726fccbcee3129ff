// Scalar types (ExecuTorch ScalarType numbering), element sizes and conversions.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace etnp {

enum class DType : int8_t {
  U8 = 0, I8 = 1, I16 = 2, I32 = 3, I64 = 4, F16 = 5, F32 = 6, F64 = 7, C64 = 9, C128 = 10, Bool = 11, BF16 = 15,
};

inline bool dtype_supported(int code) {
  switch (code) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 9: case 10: case 11: case 15: return true;
    default: return false;
  }
}
inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::U8: case DType::I8: case DType::Bool: return 1;
    case DType::I16: case DType::F16: case DType::BF16: return 2;
    case DType::I32: case DType::F32: return 4;
    case DType::C128: return 16;
    default: return 8;
  }
}
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::U8: return "uint8"; case DType::I8: return "int8"; case DType::I16: return "int16";
    case DType::I32: return "int32"; case DType::I64: return "int64"; case DType::F16: return "float16";
    case DType::F32: return "float32"; case DType::F64: return "float64"; case DType::Bool: return "bool";
    case DType::BF16: return "bfloat16"; case DType::C64: return "complex64"; case DType::C128: return "complex128";
  }
  return "?";
}
std::string scalar_type_name(int code);  // any ScalarType code, for error messages
inline bool is_floating(DType t) {
  return t == DType::F16 || t == DType::F32 || t == DType::F64 || t == DType::BF16;
}
inline bool is_complex(DType t) { return t == DType::C64 || t == DType::C128; }
inline bool is_integral(DType t, bool include_bool) {
  return !is_floating(t) && !is_complex(t) && (include_bool || t != DType::Bool);
}
// Complex tensors (only the FFT family, conj_physical, view_as_real and byte-copying layout
// kernels handle them) have no single real value: element access through double/int64 throws.
[[noreturn]] void throw_complex_element();

// ---- half / bfloat16 ----
inline float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, f;
  if (exp == 0) {
    if (man == 0) f = sign;
    else {  // subnormal
      int e = -1;
      do { e++; man <<= 1; } while (!(man & 0x400));
      f = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) f = sign | 0x7f800000u | (man << 13);
  else f = sign | ((exp + 127 - 15) << 23) | (man << 13);
  float r; std::memcpy(&r, &f, 4); return r;
}
inline uint16_t float_to_half(float v) {  // round to nearest even
  uint32_t x; std::memcpy(&x, &v, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  // overflow -> inf
  if (ax < 0x38800000u) {  // subnormal or zero in half
    float a; std::memcpy(&a, &ax, 4);
    float scaled = a * 16777216.0f;  // 2^24: half subnormal unit is 2^-24
    uint32_t m = (uint32_t)std::nearbyint(scaled);
    return (uint16_t)(sign | m);
  }
  uint32_t e = ((ax >> 23) - 127 + 15), m = ax & 0x7fffff;
  uint32_t h = (e << 10) | (m >> 13);
  uint32_t rem = m & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}
inline float bf16_to_float(uint16_t b) {
  uint32_t f = (uint32_t)b << 16; float r; std::memcpy(&r, &f, 4); return r;
}
inline uint16_t float_to_bf16(float v) {
  uint32_t x; std::memcpy(&x, &v, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

// double -> int64 without undefined behaviour (NaN and out-of-range give INT64_MIN, as x86 does).
inline int64_t f2i(double v) {
  return (v >= -9.2233720368547758e18 && v < 9.2233720368547758e18) ? (int64_t)v : INT64_MIN;
}

// ---- element load / store through double or int64 ----
inline double load_f64(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::U8: return ((const uint8_t*)p)[i];
    case DType::I8: return ((const int8_t*)p)[i];
    case DType::I16: return ((const int16_t*)p)[i];
    case DType::I32: return ((const int32_t*)p)[i];
    case DType::I64: return (double)((const int64_t*)p)[i];
    case DType::F16: return half_to_float(((const uint16_t*)p)[i]);
    case DType::F32: return ((const float*)p)[i];
    case DType::F64: return ((const double*)p)[i];
    case DType::Bool: return ((const uint8_t*)p)[i] ? 1.0 : 0.0;
    case DType::BF16: return bf16_to_float(((const uint16_t*)p)[i]);
    case DType::C64: case DType::C128: throw_complex_element();
  }
  return 0;
}
inline int64_t load_i64(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::U8: return ((const uint8_t*)p)[i];
    case DType::I8: return ((const int8_t*)p)[i];
    case DType::I16: return ((const int16_t*)p)[i];
    case DType::I32: return ((const int32_t*)p)[i];
    case DType::I64: return ((const int64_t*)p)[i];
    case DType::Bool: return ((const uint8_t*)p)[i] ? 1 : 0;
    default: return f2i(load_f64(p, t, i));
  }
}
inline void store_f64(void* p, DType t, int64_t i, double v) {
  switch (t) {
    case DType::U8: ((uint8_t*)p)[i] = (uint8_t)f2i(v); break;
    case DType::I8: ((int8_t*)p)[i] = (int8_t)f2i(v); break;
    case DType::I16: ((int16_t*)p)[i] = (int16_t)f2i(v); break;
    case DType::I32: ((int32_t*)p)[i] = (int32_t)f2i(v); break;
    case DType::I64: ((int64_t*)p)[i] = f2i(v); break;
    case DType::F16: ((uint16_t*)p)[i] = float_to_half((float)v); break;
    case DType::F32: ((float*)p)[i] = (float)v; break;
    case DType::F64: ((double*)p)[i] = v; break;
    case DType::Bool: ((uint8_t*)p)[i] = v != 0; break;
    case DType::BF16: ((uint16_t*)p)[i] = float_to_bf16((float)v); break;
    case DType::C64: case DType::C128: throw_complex_element();
  }
}
inline void store_i64(void* p, DType t, int64_t i, int64_t v) {
  switch (t) {
    case DType::U8: ((uint8_t*)p)[i] = (uint8_t)v; break;
    case DType::I8: ((int8_t*)p)[i] = (int8_t)v; break;
    case DType::I16: ((int16_t*)p)[i] = (int16_t)v; break;
    case DType::I32: ((int32_t*)p)[i] = (int32_t)v; break;
    case DType::I64: ((int64_t*)p)[i] = v; break;
    case DType::Bool: ((uint8_t*)p)[i] = v != 0; break;
    default: store_f64(p, t, i, (double)v);
  }
}

}  // namespace etnp
