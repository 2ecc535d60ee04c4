"""The GPU side: the measurement harness and its record schema, the measurements, the Triton kernels, the CUDA
sources and the GPU rules both sides use. Imports only the standard library, numpy, torch, triton and itself: the
GPU machines that run it have nothing else (utils/__init__.py has the map)."""
