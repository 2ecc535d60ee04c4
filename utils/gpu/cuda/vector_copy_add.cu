// vector_copy_add.cu: a device-to-device copy, a vector add and a host-to-device copy, each checked
// against the host and timed with CUDA events (median of many runs after a warm-up).
//
// Build (Hopper; name the target so the machine code is sm_90's own, not the driver's JIT of PTX):
//     nvcc -O3 -std=c++17 -arch=sm_90 -o vector_copy_add utils/gpu/cuda/vector_copy_add.cu
// Run:
//     ./vector_copy_add [n_floats] [reps]      (defaults: 2^28 floats, 1 GiB per buffer; 50 reps)
//
// Bytes counted (the fewest each operation must move through device memory):
//     copy  dst[i] = src[i]          read n*4 + write n*4
//     add   c[i]   = a[i] + b[i]     read 2*n*4 + write n*4
//     h2d   host (pinned) -> device  n*4 over the host link
// Inputs are hashed pseudo-random floats (never zeros); outputs are poisoned with NaN before each
// checked run, and every element is compared with the host's answer before anything is timed.
// Every CUDA call's status is checked, and the last error after every launch; any failure exits 1.
#include <cmath>

#include "common.cuh"

__global__ void copy_kernel(const float* __restrict__ src, float* __restrict__ dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}

struct Launch {
    int blocks;
    int threads;
};

static Launch launch_for(size_t n) {
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int threads = 256;
    // Enough blocks to fill every multiprocessor several times over; the grid-stride loop covers the rest.
    size_t want = (n + threads - 1) / threads;
    size_t cap = static_cast<size_t>(sms) * 32;
    return Launch{static_cast<int>(std::max<size_t>(1, std::min(want, cap))), threads};
}

static bool check(const char* what, const std::vector<float>& got, size_t n, uint64_t seed_a,
                  uint64_t seed_b, bool add) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        float want = add ? hash_float(i, seed_a) + hash_float(i, seed_b) : hash_float(i, seed_a);
        if (!(got[i] == want)) {  // NaN (an unwritten element) fails too
            if (bad < 5) std::fprintf(stderr, "%s: element %zu is %g, want %g\n", what, i, got[i], want);
            ++bad;
        }
    }
    if (bad) std::fprintf(stderr, "%s: %zu of %zu elements wrong\n", what, bad, n);
    return bad == 0;
}

int main(int argc, char** argv) {
    size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(1) << 28);
    int reps = argc > 2 ? std::atoi(argv[2]) : 50;
    if (n == 0 || reps <= 0) {
        std::fprintf(stderr, "usage: %s [n_floats > 0] [reps > 0]\n", argv[0]);
        return 2;
    }
    const uint64_t seed_a = 1, seed_b = 2;
    const size_t bytes = n * sizeof(float);

    cudaDeviceProp prop;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

    float *a, *b, *c, *host_pinned;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMalloc(&c, bytes));
    CUDA_CHECK(cudaMallocHost(&host_pinned, bytes));
    std::vector<float> got(n);

    Launch l = launch_for(n);
    fill_kernel<<<l.blocks, l.threads>>>(a, n, seed_a);
    LAUNCH_CHECK();
    fill_kernel<<<l.blocks, l.threads>>>(b, n, seed_b);
    LAUNCH_CHECK();

    // Correct first: poison the output (all bits set is a NaN), run once, compare every element.
    CUDA_CHECK(cudaMemset(c, 0xFF, bytes));
    copy_kernel<<<l.blocks, l.threads>>>(a, c, n);
    LAUNCH_CHECK();
    CUDA_CHECK(cudaMemcpy(got.data(), c, bytes, cudaMemcpyDeviceToHost));
    bool ok = check("copy", got, n, seed_a, seed_b, false);

    CUDA_CHECK(cudaMemset(c, 0xFF, bytes));
    add_kernel<<<l.blocks, l.threads>>>(a, b, c, n);
    LAUNCH_CHECK();
    CUDA_CHECK(cudaMemcpy(got.data(), c, bytes, cudaMemcpyDeviceToHost));
    ok = check("add", got, n, seed_a, seed_b, true) && ok;

    for (size_t i = 0; i < n; ++i) host_pinned[i] = hash_float(i, seed_b);
    CUDA_CHECK(cudaMemset(c, 0xFF, bytes));
    CUDA_CHECK(cudaMemcpy(c, host_pinned, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(got.data(), c, bytes, cudaMemcpyDeviceToHost));
    ok = check("h2d", got, n, seed_b, seed_a, false) && ok;
    if (!ok) return 1;

    const int warmup = 5;
    float t_copy = median_ms([&] { copy_kernel<<<l.blocks, l.threads>>>(a, c, n); LAUNCH_CHECK(); }, warmup, reps);
    float t_add = median_ms([&] { add_kernel<<<l.blocks, l.threads>>>(a, b, c, n); LAUNCH_CHECK(); }, warmup, reps);
    float t_h2d = median_ms([&] { CUDA_CHECK(cudaMemcpyAsync(c, host_pinned, bytes, cudaMemcpyHostToDevice)); },
                            warmup, reps);
    CUDA_CHECK(cudaDeviceSynchronize());

    std::printf("device %s, %zu floats per buffer, median of %d runs after %d warm-ups\n", prop.name, n,
                reps, warmup);
    std::printf("%-6s %14s %12s %12s\n", "op", "bytes", "median_ms", "GB/s");
    std::printf("%-6s %14zu %12.4f %12.1f\n", "copy", 2 * bytes, t_copy, 2 * bytes / (t_copy * 1e6));
    std::printf("%-6s %14zu %12.4f %12.1f\n", "add", 3 * bytes, t_add, 3 * bytes / (t_add * 1e6));
    std::printf("%-6s %14zu %12.4f %12.1f\n", "h2d", bytes, t_h2d, bytes / (t_h2d * 1e6));

    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    CUDA_CHECK(cudaFreeHost(host_pinned));
    return 0;
}
