"""The book's measurement definitions, one module per subject; importing this package registers them
all in utils.measurements.common.REGISTRY, in the order below (the two ceilings first: every run
measures them before anything else, and `--list` prints this order).

    ceilings            copy-bandwidth, matmul-rate
    gemm_batch_sweep    gemm-batch-sweep
    host                host-device-copy, launch-overhead
    fused_softmax       fused-softmax
    kernel_fusion       kernel-fusion
    attention_forward   attention-forward
    strided_copy        strided-copy
    top_k               top-k

Each definition is a `prepare` (buffers and variants, each variant with its correctness check) and a
`metrics` (results to named metrics), registered as a Measurement; common.py holds what they share.
utils.measure runs them. To add a measurement, write its module here and import it below.
"""
from utils.measurements import (ceilings, gemm_batch_sweep, host, fused_softmax, kernel_fusion,  # noqa: F401
                                attention_forward, strided_copy, top_k)
