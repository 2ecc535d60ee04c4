"""The book's Triton kernels (imports only the standard library, torch and triton).

Set TRITON_INTERPRET=1 before importing this package to run them on CPU tensors.
"""
from utils.kernels.attention import attention
from utils.kernels.attention import materialised as materialised_attention
from utils.kernels.attention import reference as attention_reference
from utils.kernels.copy import DEFAULT_BLOCK, copy, tick
from utils.kernels.fused_chain import chain_reference, eager_chain, fused_chain
from utils.kernels.softmax import softmax

__all__ = ["DEFAULT_BLOCK", "attention", "attention_reference", "chain_reference", "copy", "eager_chain", "fused_chain",
           "materialised_attention", "softmax", "tick"]
