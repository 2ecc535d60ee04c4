// common.cuh: what the book's CUDA programs share: error checks on every CUDA call and launch,
// hashed pseudo-random inputs that host and device compute alike (never zeros, so an unwritten output
// cannot pass for a written one), and the CUDA-event median timer. Included by each .cu in this folder.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,     \
                         cudaGetErrorString(err_));                                        \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

// After every launch: a bad configuration shows here, a fault inside the kernel at the next sync.
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

__host__ __device__ inline float hash_float(uint64_t i, uint64_t seed) {
    uint64_t z = i + seed * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    // 24 random bits -> a float in [-1, 1); exactly representable, so host and device agree.
    return static_cast<float>(static_cast<int32_t>(z >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
}

__global__ void fill_kernel(float* __restrict__ x, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = hash_float(i, seed);
}

// Time `op` (which enqueues work on the default stream) `reps` times after `warmup` runs; median in ms.
template <typename Op>
static float median_ms(Op op, int warmup, int reps) {
    for (int i = 0; i < warmup; ++i) op();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<cudaEvent_t> start(reps), stop(reps);
    for (int i = 0; i < reps; ++i) {
        CUDA_CHECK(cudaEventCreate(&start[i]));
        CUDA_CHECK(cudaEventCreate(&stop[i]));
    }
    for (int i = 0; i < reps; ++i) {
        CUDA_CHECK(cudaEventRecord(start[i]));
        op();
        CUDA_CHECK(cudaEventRecord(stop[i]));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; ++i) {
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], start[i], stop[i]));
        CUDA_CHECK(cudaEventDestroy(start[i]));
        CUDA_CHECK(cudaEventDestroy(stop[i]));
    }
    std::sort(ms.begin(), ms.end());
    return reps % 2 ? ms[reps / 2] : 0.5f * (ms[reps / 2 - 1] + ms[reps / 2]);
}
