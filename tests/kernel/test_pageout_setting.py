"""FAK_PAGEOUT_BYTES: how long a benign result may be before it is paged out behind a pointer.

An agent that cannot page a result back in (Claude Code and Codex on the gateway have no tool
for it) needs to see whole files, so the threshold is a setting; 0 turns page-out off.
"""

from __future__ import annotations

import pytest

from fak.abi import ToolResult, VerdictKind
from fak.config import Settings
from fak.kernel import Kernel, build_kernel

BENIGN = b"".join(b"def f%d(x):\n    return x + %d\n" % (i, i) for i in range(800))  # ~25 KB


def _kind(kernel: Kernel) -> VerdictKind:
    return kernel.admit_result(ToolResult(tool="Read", payload=BENIGN)).verdict.kind


def test_default_pages_out_a_large_benign_result() -> None:
    assert _kind(Kernel()) == VerdictKind.TRANSFORM


def test_zero_admits_it_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAK_PAGEOUT_BYTES", "0")
    kernel = build_kernel(Settings.current())
    admission = kernel.admit_result(ToolResult(tool="Read", payload=BENIGN))
    assert admission.verdict.kind == VerdictKind.ALLOW and admission.payload == BENIGN


def test_a_larger_threshold_and_an_explicit_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAK_PAGEOUT_BYTES", str(len(BENIGN) + 1))
    assert _kind(build_kernel(Settings.current())) == VerdictKind.ALLOW
    assert _kind(Kernel(pageout_bytes=1024)) == VerdictKind.TRANSFORM
