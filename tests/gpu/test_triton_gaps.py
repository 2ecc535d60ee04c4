"""utils.gpu.triton_gaps: the kernel scanner (a launched jit function is a kernel, an inlined helper is not; a
CUDA template counts once), the constructs that mark each gap in CUDA source, the classification of
every kernel in the book, the decision table against the Triton versions, and the reduction counts."""
import importlib.util
import inspect

import pytest

from utils.gpu import triton_gaps as tg

TRITON_SRC = '''
@triton.jit
def _helper(x):
    return x * 2

@triton.jit
def _kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass

@triton.jit
def _never_launched(x_ptr):
    pass

def run(x):
    _kernel[(1,)](x, 1, BLOCK=64)
'''

CUDA_SRC = '''
template <int PITCH>
__global__ void tiled(float* out) {
    __shared__ float tile[32][PITCH];
    if (threadIdx.x) { out[0] = tile[0][0]; }
    __syncthreads();
}
__global__ void warp_sum(float* out) {
    float v = out[threadIdx.x];
    for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (__ballot_sync(0xffffffff, v > 0)) out[0] = v;
}
__global__ void producer_consumer(float* out) {
    asm volatile("bar.sync 1, 128;");
}
__global__ void __cluster_dims__(2, 1, 1) clustered(float* out) { out[0] = 1; }
__global__ void grid_stride(const float* a, float* b, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = a[i];
    __syncthreads();
}
'''


def test_a_launched_jit_function_is_a_kernel_and_an_inlined_helper_is_not():
    assert tg.triton_kernels(TRITON_SRC) == ["_kernel"]


def test_cuda_kernels_are_found_once_each_with_their_whole_bodies():
    ks = tg.cuda_kernels(CUDA_SRC)
    assert set(ks) == {"tiled", "warp_sum", "producer_consumer", "clustered", "grid_stride"}
    assert ks["tiled"].startswith("template") and ks["tiled"].rstrip().endswith("}")
    assert "__syncthreads" in ks["tiled"]           # nested braces did not cut the body short


def test_each_gap_is_detected_by_its_construct_and_only_by_it():
    ks = tg.cuda_kernels(CUDA_SRC)
    assert tg.constructs(ks["tiled"]) == ("smem",)
    assert tg.constructs(ks["warp_sum"]) == ("warp",)
    assert tg.constructs(ks["producer_consumer"]) == ("sync",)
    # a grid-stride loop and a block-wide barrier are what Triton writes too: no gap
    assert tg.constructs(ks["grid_stride"]) == ()
    assert tg.constructs(ks["clustered"]) == ("launch",)
    assert tg.constructs("cudaLaunchCooperativeKernel((void*)k, g, b, args);") == ("launch",)


def test_every_kernel_in_the_book_is_found_and_classified():
    ks = tg.inventory()
    found = {(k.file, k.name) for k in ks}
    assert found == set(tg.NEEDS), (found ^ set(tg.NEEDS))
    langs = {k.language for k in ks}
    assert langs == {"Triton", "CUDA"}
    for k in ks:
        assert set(k.needs) <= set(tg.GAP) and k.why
        if k.language == "CUDA":
            # the constructs the source uses are needs (a CUDA kernel needing a gap must show its construct)
            assert set(k.constructs) == set(k.needs), (k.name, k.constructs, k.needs)


def test_an_unclassified_kernel_fails_the_count(tmp_path):
    (tmp_path / "utils" / "gpu" / "kernels").mkdir(parents=True)
    (tmp_path / "utils" / "gpu" / "cuda").mkdir(parents=True)
    (tmp_path / "utils" / "gpu" / "kernels" / "new.py").write_text(TRITON_SRC)
    with pytest.raises(KeyError, match="_kernel in utils/gpu/kernels/new.py"):
        tg.inventory(tmp_path)


def test_tally_counts_each_gap():
    t = tg.tally(tg.inventory())
    assert t["total"] == len(tg.NEEDS)
    assert t["none"] == sum(1 for needs, _ in tg.NEEDS.values() if not needs)
    assert t["none"] + sum(t[g.key] for g in tg.GAPS) >= t["total"]


def test_the_decision_follows_the_triton_version():
    assert tg.decide(set()) == "Triton"
    assert tg.decide({"sync"}, (3, 3)) == "CUDA (or CUTLASS)"
    assert tg.decide({"sync"}, (3, 4)) == "Triton"
    assert tg.decide({"smem"}, (3, 4)) == "CUDA (or CUTLASS)"
    assert tg.decide({"smem"}, (3, 5)) == "Gluon"
    assert tg.decide({"smem", "sync"}, (3, 5)) == "Gluon"           # the lowest tool any need calls for
    assert tg.decide({"warp"}, (9, 9)) == "CUDA (or CUTLASS)"       # no Triton version offers lane-level code
    assert tg.decide({"launch"}, (2, 0)) == "Triton"                # graphs are host side
    with pytest.raises(ValueError, match="unknown gap"):
        tg.decide({"tensor cores"})


def test_a_later_version_never_needs_a_lower_level_tool():
    versions = [(2, 0), (3, 3), (3, 4), (3, 5), (3, 9)]
    for g in tg.GAP:
        ranks = [tg.TOOLS.index(tg.tool_for(g, v)) for v in versions]
        assert ranks == sorted(ranks, reverse=True), g


def test_every_offer_has_a_source_and_a_date():
    for g in tg.GAPS:
        for _since, tool, what, src in g.offered:
            assert tool in tg.TOOLS and what and "20" in src


def test_reductions_shuffles_need_one_barrier_and_a_word_per_warp():
    for n in (32, 64, 256, 1024):
        tree, shfl = tg.tree_reduction(n), tg.shuffle_reduction(n)
        assert tree["steps"] == shfl["steps"] == n.bit_length() - 1
        assert shfl["barriers"] == (0 if n == 32 else 1) and shfl["smem_bytes"] == (0 if n == 32 else 2 * n // 32 * 4)
        # the tree: n words written, then 3 words moved per active thread per step: 3 (n - 1) words
        assert tree["smem_bytes"] == 4 * (n + 3 * (n - 1))
    for bad in (16, 48, 0, True, 64.0):
        with pytest.raises(ValueError, match="threads"):
            tg.tree_reduction(bad)
    with pytest.raises(ValueError, match="elem_bytes"):
        tg.shuffle_reduction(64, 3)


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_the_installed_triton_offers_what_the_table_says_at_its_version():
    import triton
    import triton.language as tl
    v = tuple(int(x) for x in triton.__version__.split(".")[:2])
    if v >= (3, 4):
        assert hasattr(tl, "make_tensor_descriptor")
        assert "warp_specialize" in inspect.signature(tl.range.__init__).parameters
    if v >= (3, 5):
        from triton.experimental.gluon import language as gl
        assert all(hasattr(gl, n) for n in ("warp_specialize", "allocate_shared_memory", "bank_conflicts"))
