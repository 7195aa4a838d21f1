"""``fak bench decide`` (tier T4): the decide path in-process, vDSO on and off, vs a spawned hook.

A fixed airline-support trace (slice ``tau2-airline-smoke``, 12 calls) runs through two fresh
kernels, vDSO on and off: per call, ``repeat`` consecutive ``Kernel.syscall`` calls are timed
and their mean is that call's sample. The baseline spawns ``fak hook`` (a whole process per
decision, no resident decider) ``spawns`` times. The gate passes when the in-process p50 with
the vDSO on is below the spawned p50. Writes ``report.json`` (and ``baseline.json``).
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fak.config import process_environ

__all__ = ["TRACE", "decide_report", "workload_hash"]

SLICE = "tau2-airline-smoke"
# (tool, args, meta): read-only lookups repeat (vDSO hits), a write and a denied call mixed in.
TRACE: tuple[tuple[str, dict[str, Any], dict[str, bool]], ...] = (
    ("get_user_details", {"user_id": "mia_li_3668"}, {"readOnly": True, "idempotent": True}),
    ("get_reservation_details", {"id": "ABC123"}, {"readOnly": True, "idempotent": True}),
    ("search_direct_flight", {"origin": "JFK", "destination": "SFO", "date": "2024-05-20"}, {}),
    ("get_reservation_details", {"id": "ABC123"}, {"readOnly": True, "idempotent": True}),
    ("calculate", {"expression": "1200 * 0.8"}, {"readOnly": True, "idempotent": True}),
    ("get_user_details", {"user_id": "mia_li_3668"}, {"readOnly": True, "idempotent": True}),
    ("delete_account", {"user_id": "mia_li_3668"}, {}),
    ("get_reservation_details", {"id": "XYZ789"}, {"readOnly": True, "idempotent": True}),
    ("search_direct_flight", {"origin": "JFK", "destination": "SFO", "date": "2024-05-20"}, {}),
    ("calculate", {"expression": "1200 * 0.8"}, {"readOnly": True, "idempotent": True}),
    ("get_user_details", {"user_id": "mia_li_3668"}, {"readOnly": True, "idempotent": True}),
    ("get_reservation_details", {"id": "ABC123"}, {"readOnly": True, "idempotent": True}),
)


def workload_hash(
    slice_id: str, trace: Sequence[tuple[str, Mapping[str, Any], Mapping[str, bool]]]
) -> str:
    """First 16 hex of sha256(slice id, then per call tool NUL args NUL sorted k=v; meta)."""
    h = hashlib.sha256(slice_id.encode())
    for tool, args, meta in trace:
        h.update(tool.encode() + b"\0" + json.dumps(args, sort_keys=True).encode() + b"\0")
        h.update("".join(f"{k}={str(v).lower()};" for k, v in sorted(meta.items())).encode())
    return h.hexdigest()[:16]


def _pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p / 100.0 * (len(ordered) - 1))]


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ns": _pct(values, 50),
        "p99_ns": _pct(values, 99),
        "mean_ns": statistics.fmean(values),
        "samples": float(len(values)),
    }


def _in_process(vdso: bool, repeat: int) -> dict[str, Any]:
    from fak.abi import ToolCall
    from fak.kernel import Kernel
    from fak.policy import Policy

    kernel = Kernel(Policy.default(), vdso=vdso)
    for tool in {t for t, _, _ in TRACE}:
        read_only = tool != "search_direct_flight"
        kernel.register_tool(tool, lambda args: {"ok": True, "n": len(args)}, read_only=read_only)
    samples: list[float] = []
    verdicts: list[str] = []
    for tool, args, _ in TRACE:
        call = ToolCall(tool, args)
        verdicts.append(str(kernel.syscall(call).verdict.kind))
        start = time.perf_counter_ns()
        for _ in range(repeat):
            kernel.syscall(call)
        samples.append((time.perf_counter_ns() - start) / repeat)
    counters = kernel.counters
    calls = counters.get("submits", 0)
    return {
        **_stats(samples),
        "verdicts": verdicts,
        "vdso_hit_rate": counters.get("vdso_hits", 0) / calls if calls else 0.0,
    }


def _spawned(spawns: int) -> dict[str, float]:
    fak = Path(sys.executable).with_name("fak")
    cmd = [str(fak), "hook"] if fak.exists() else [sys.executable, "-m", "fak.cli.main", "hook"]
    env = {k: v for k, v in process_environ().items() if not k.startswith("FAK_")}
    env["FAK_HOOK_DAEMON"] = "0"  # a whole process per decision: the spawned-hook baseline
    payload = json.dumps(
        {
            "tool": "get_reservation_details",
            "args": {"id": "ABC123"},
            "meta": {"readOnly": True, "idempotent": True},
        }
    ).encode()
    samples = []
    for _ in range(spawns):
        start = time.perf_counter_ns()
        subprocess.run(cmd, input=payload, capture_output=True, env=env, check=False, timeout=60)
        samples.append(float(time.perf_counter_ns() - start))
    return _stats(samples)


def decide_report(*, repeat: int = 2000, spawns: int = 30, baseline: bool = True) -> dict[str, Any]:
    """vDSO on/off in-process arms, the spawned baseline, the gate; a JSON-able record."""
    on, off = _in_process(True, repeat), _in_process(False, repeat)
    record: dict[str, Any] = {
        "benchmark": "decide",
        "slice": SLICE,
        "workload_hash": workload_hash(SLICE, TRACE),
        "calls": len(TRACE),
        "repeat": repeat,
        "vdso_on": on,
        "vdso_off": off,
    }
    if baseline:
        spawned = _spawned(spawns)
        record["spawned_hook"] = spawned
        record["gate_primary"] = "pass" if on["p50_ns"] < spawned["p50_ns"] else "fail"
        record["spawned_over_inprocess_p50"] = spawned["p50_ns"] / on["p50_ns"]
    return record
