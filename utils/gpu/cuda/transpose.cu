// transpose.cu: out = in^T for a row-major float matrix, three ways, each checked against the host and
// timed with CUDA events (median of many runs after a warm-up):
//     naive      each thread reads in[r][c] and writes out[c][r]: reads coalesced, writes a row apart
//     pitch32    through a 32x32 shared-memory tile, tile[32][32]: the tile's column read is a 32-way
//                bank conflict (all 32 lanes of a warp in one bank)
//     pitch33    the same with tile[32][33]: one column of padding spreads the column over all 32 banks
//
// Build (Hopper; name the target so the machine code is sm_90's own, not the driver's JIT of PTX):
//     nvcc -O3 -std=c++17 -arch=sm_90 -o transpose utils/gpu/cuda/transpose.cu
// Run:
//     ./transpose [rows] [cols] [reps]      (defaults: 16384 x 16384 floats, 1 GiB per matrix; 50 reps)
//
// Bytes counted (the fewest a transpose must move through device memory): read rows*cols*4, write
// rows*cols*4. Inputs are hashed pseudo-random floats (never zeros); the output is poisoned with NaN
// before each checked run and every element is compared with in^T on the host before anything is
// timed. Every CUDA call's status is checked, and the last error after every launch; any failure
// exits 1. The kernels between the BEGIN/END KERNELS markers are also compiled by the harness
// (utils/gpu/measurements/transpose.py, measurement `smem-transpose`), so both time the same code.
#include "common.cuh"

// BEGIN KERNELS
// A block of TILE x BLOCK_ROWS threads moves one TILE x TILE tile; each thread moves TILE / BLOCK_ROWS
// elements. in is rows x cols, out is cols x rows, both row-major; edges are masked.
constexpr int TILE = 32;
constexpr int BLOCK_ROWS = 8;

template <int PITCH>
__global__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TILE][PITCH];
    int c = blockIdx.x * TILE + threadIdx.x;            // input column this thread reads
    int r = blockIdx.y * TILE + threadIdx.y;            // first input row this thread reads
    for (int j = 0; j < TILE; j += BLOCK_ROWS)          // a warp writes one tile row: conflict-free
        if (c < cols && r + j < rows)
            tile[threadIdx.y + j][threadIdx.x] = in[static_cast<size_t>(r + j) * cols + c];
    __syncthreads();
    int oc = blockIdx.y * TILE + threadIdx.x;           // output column = input row
    int orow = blockIdx.x * TILE + threadIdx.y;         // output row = input column
    for (int j = 0; j < TILE; j += BLOCK_ROWS)          // a warp reads one tile column: lanes PITCH words apart
        if (oc < rows && orow + j < cols)
            out[static_cast<size_t>(orow + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)          // reads along a row, writes down a column
        if (c < cols && r + j < rows)
            out[static_cast<size_t>(c) * rows + (r + j)] = in[static_cast<size_t>(r + j) * cols + c];
}
// END KERNELS

enum class Kind { naive, pitch32, pitch33 };

static void launch(Kind kind, const float* in, float* out, int rows, int cols) {
    dim3 block(TILE, BLOCK_ROWS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    switch (kind) {
        case Kind::naive: transpose_naive<<<grid, block>>>(in, out, rows, cols); break;
        case Kind::pitch32: transpose_tiled<TILE><<<grid, block>>>(in, out, rows, cols); break;
        case Kind::pitch33: transpose_tiled<TILE + 1><<<grid, block>>>(in, out, rows, cols); break;
    }
    LAUNCH_CHECK();
}

static bool check(const char* what, const std::vector<float>& got, int rows, int cols, uint64_t seed) {
    size_t bad = 0;
    for (size_t r = 0; r < static_cast<size_t>(cols); ++r)           // out is cols x rows
        for (size_t c = 0; c < static_cast<size_t>(rows); ++c) {
            float want = hash_float(c * static_cast<size_t>(cols) + r, seed);   // in[c][r]
            float have = got[r * static_cast<size_t>(rows) + c];
            if (!(have == want)) {  // NaN (an unwritten element) fails too
                if (bad < 5) std::fprintf(stderr, "%s: out[%zu][%zu] is %g, want %g\n", what, r, c, have, want);
                ++bad;
            }
        }
    if (bad) std::fprintf(stderr, "%s: %zu of %zu elements wrong\n", what, bad, got.size());
    return bad == 0;
}

int main(int argc, char** argv) {
    long long rows_arg = argc > 1 ? std::atoll(argv[1]) : 16384;
    long long cols_arg = argc > 2 ? std::atoll(argv[2]) : 16384;
    int reps = argc > 3 ? std::atoi(argv[3]) : 50;
    const long long grid_y_max = 65535LL * TILE;                     // gridDim.y limit, in rows
    if (rows_arg <= 0 || cols_arg <= 0 || rows_arg > grid_y_max || cols_arg > (1LL << 30) || reps <= 0) {
        std::fprintf(stderr, "usage: %s [rows in 1..%lld] [cols in 1..2^30] [reps > 0]\n", argv[0], grid_y_max);
        return 2;
    }
    const int rows = static_cast<int>(rows_arg), cols = static_cast<int>(cols_arg);
    const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
    const size_t bytes = n * sizeof(float);
    const uint64_t seed = 1;

    cudaDeviceProp prop;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

    float *in, *out;
    CUDA_CHECK(cudaMalloc(&in, bytes));
    CUDA_CHECK(cudaMalloc(&out, bytes));
    std::vector<float> got(n);
    fill_kernel<<<prop.multiProcessorCount * 32, 256>>>(in, n, seed);
    LAUNCH_CHECK();

    const Kind kinds[] = {Kind::naive, Kind::pitch32, Kind::pitch33};
    const char* names[] = {"naive", "pitch32", "pitch33"};
    bool ok = true;
    for (int k = 0; k < 3; ++k) {  // correct first: poison (all bits set is a NaN), run once, compare all
        CUDA_CHECK(cudaMemset(out, 0xFF, bytes));
        launch(kinds[k], in, out, rows, cols);
        CUDA_CHECK(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
        ok = check(names[k], got, rows, cols, seed) && ok;
    }
    if (!ok) return 1;

    const int warmup = 5;
    float ms[3];
    for (int k = 0; k < 3; ++k)
        ms[k] = median_ms([&] { launch(kinds[k], in, out, rows, cols); }, warmup, reps);
    CUDA_CHECK(cudaDeviceSynchronize());

    std::printf("device %s, %d x %d floats, median of %d runs after %d warm-ups\n", prop.name, rows, cols,
                reps, warmup);
    std::printf("%-8s %14s %12s %12s\n", "kernel", "bytes", "median_ms", "GB/s");
    for (int k = 0; k < 3; ++k)
        std::printf("%-8s %14zu %12.4f %12.1f\n", names[k], 2 * bytes, ms[k], 2 * bytes / (ms[k] * 1e6));
    std::printf("pitch32 / pitch33 time: %.3f\n", ms[1] / ms[2]);

    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));
    return 0;
}
