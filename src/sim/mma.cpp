// mma.sync for the sim backend: gathers the warp's fragments into whole
// matrices per the PTX ISA layouts (convkit/sim/mma.h), multiplies, and
// scatters D back.
#include <array>
#include <cstdint>

#include "convkit/core/error.h"
#include "convkit/sim/mma.h"

namespace convkit::sim::detail {
namespace {

constexpr int kM = 16, kN = 8, kMaxK = 16;

struct Matrices {
  int K = 0;
  double a[kM][kMaxK] = {};
  double b[kMaxK][kN] = {};
};

// Row and column of element i (0..3) of a lane's C/D fragment.
int cd_row(unsigned lane, int i) { return static_cast<int>(lane >> 2) + (i >= 2 ? 8 : 0); }
int cd_col(unsigned lane, int i) { return static_cast<int>(lane % 4) * 2 + (i & 1); }

void gather_tf32(const std::array<MmaLane*, 32>& lanes, Matrices& m) {
  m.K = 8;
  for (unsigned lane = 0; lane < 32; ++lane) {
    const int group = static_cast<int>(lane >> 2), tig = static_cast<int>(lane % 4);
    const std::uint32_t* a = lanes[lane]->a;
    const std::uint32_t* b = lanes[lane]->b;
    m.a[group][tig] = tf32_operand(a[0]);
    m.a[group + 8][tig] = tf32_operand(a[1]);
    m.a[group][tig + 4] = tf32_operand(a[2]);
    m.a[group + 8][tig + 4] = tf32_operand(a[3]);
    m.b[tig][group] = tf32_operand(b[0]);
    m.b[tig + 4][group] = tf32_operand(b[1]);
  }
}

void gather_bf16(const std::array<MmaLane*, 32>& lanes, Matrices& m) {
  m.K = 16;
  for (unsigned lane = 0; lane < 32; ++lane) {
    const int group = static_cast<int>(lane >> 2), tig = static_cast<int>(lane % 4);
    for (int i = 0; i < 8; ++i) {
      const std::uint32_t reg = lanes[lane]->a[i / 2];
      const auto half = static_cast<std::uint16_t>(i % 2 == 0 ? reg & 0xffffu : reg >> 16);
      const int row = group + ((i % 4) >= 2 ? 8 : 0);
      const int col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      m.a[row][col] = bf16_to_float(half);
    }
    for (int i = 0; i < 4; ++i) {
      const std::uint32_t reg = lanes[lane]->b[i / 2];
      const auto half = static_cast<std::uint16_t>(i % 2 == 0 ? reg & 0xffffu : reg >> 16);
      m.b[tig * 2 + (i & 1) + (i >= 2 ? 8 : 0)][group] = bf16_to_float(half);
    }
  }
}

}  // namespace

void mma_sync_warp(MmaShape shape, const std::array<MmaLane*, 32>& lanes) {
  Matrices m;
  switch (shape) {
    case MmaShape::m16n8k8_tf32: gather_tf32(lanes, m); break;
    case MmaShape::m16n8k16_bf16: gather_bf16(lanes, m); break;
    default: CK_FAIL("mma.sync: unknown shape ", static_cast<int>(shape));
  }
  // Every lane's D is computed before any is written: a lane's D may alias its
  // own C, which another lane's result never reads, but computing first keeps
  // that argument out of the way.
  float d[32][4];
  for (unsigned lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 4; ++i) {
      const int row = cd_row(lane, i), col = cd_col(lane, i);
      double acc = lanes[lane]->c[i];
      for (int k = 0; k < m.K; ++k) acc += m.a[row][k] * m.b[k][col];
      d[lane][i] = static_cast<float>(acc);
    }
  }
  for (unsigned lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) lanes[lane]->d[i] = d[lane][i];
}

}  // namespace convkit::sim::detail
