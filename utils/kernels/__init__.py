"""The book's Triton kernels (imports only the standard library, torch and triton).

Set TRITON_INTERPRET=1 before importing this package to run them on CPU tensors.
"""
from utils.kernels.copy import DEFAULT_BLOCK, copy, tick

__all__ = ["DEFAULT_BLOCK", "copy", "tick"]
