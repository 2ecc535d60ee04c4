"""The book's measurement definitions, one module per subject; importing this package registers them
all in utils.gpu.measurements.common.REGISTRY: the modules of FIRST in that order (the two ceilings first:
every run measures them before anything else, and `--list` prints this order), then every other module
of this folder in alphabetical order.

    ceilings            copy-bandwidth, matmul-rate
    gemm_batch_sweep    gemm-batch-sweep
    host                host-device-copy, launch-overhead
    (the rest)          one module per chapter's measurement: fused_softmax, kernel_fusion, ...

Each definition is a `prepare` (buffers and variants, each variant with its correctness check) and a
`metrics` (results to named metrics), registered as a Measurement; common.py holds what they share.
utils.measure runs them. To add a measurement, write its module here: it is found and imported.
"""
import importlib
import pkgutil

FIRST = ("ceilings", "gemm_batch_sweep", "host")
_REST = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in FIRST and m.name != "common")

for _module in (*FIRST, *_REST):
    importlib.import_module(f"{__name__}.{_module}")
