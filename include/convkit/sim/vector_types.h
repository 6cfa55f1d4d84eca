#pragma once
// CUDA's small vector types (uint3, dim3, float4, ...) for the sim backend.
//
// They live in convkit::sim and cuda_compat.h brings them into the global
// namespace with using-declarations. Keeping the real names namespaced matters:
// the same library also links code compiled by nvcc, whose ::dim3 and ::uint3
// are different types, and two different definitions of one global struct would
// break the one-definition rule.
//
// Layouts and alignments match CUDA's vector_types.h, so a kernel that reads a
// float4 from an array sees the same bytes on both compilers.

namespace convkit::sim {

struct uint3 {
  unsigned int x, y, z;
};

// Launch geometry: components left out default to 1, as in CUDA.
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}  // NOLINT: implicit, as in CUDA
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// clang-format off
struct alignas(8) int2 { int x, y; };
struct int3 { int x, y, z; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned int x, y; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
// clang-format on

constexpr int2 make_int2(int x, int y) { return {x, y}; }
constexpr int3 make_int3(int x, int y, int z) { return {x, y, z}; }
constexpr int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
constexpr uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
constexpr uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
constexpr uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
constexpr float2 make_float2(float x, float y) { return {x, y}; }
constexpr float3 make_float3(float x, float y, float z) { return {x, y, z}; }
constexpr float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
constexpr double2 make_double2(double x, double y) { return {x, y}; }

static_assert(sizeof(float4) == 16 && alignof(float4) == 16);
static_assert(sizeof(float2) == 8 && alignof(float2) == 8);
static_assert(sizeof(uint3) == 12 && sizeof(dim3) == 12);

}  // namespace convkit::sim
