// The LDTILECFG operand of Intel AMX (palette 1): per tile register tmm0..tmm7 its bytes a row
// (colsb, at most 64) and its rows (at most 16); unused registers 0, reserved bytes 0 (any other
// value faults). Shared by the AMX GEMM paths (qgemm_qb4_amx.cpp, qgemm_q8_amx.cpp).
#pragma once
#include <cstdint>

namespace etnp {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  void set(int tile, int64_t rows_, int64_t colsb_) {
    rows[tile] = (uint8_t)rows_;
    colsb[tile] = (uint16_t)colsb_;
  }
};
static_assert(sizeof(AmxTileConfig) == 64, "the LDTILECFG operand is 64 bytes");

}  // namespace etnp
