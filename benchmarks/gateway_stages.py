"""Where fak's per-turn time goes: each in-process stage of one proxied Chat turn, timed alone.

The same two payloads as ``benchmarks/gateway.py`` (``small``; ``20kb``: a ~20 KB benign tool
result in the history), the same kernel ``fak serve`` builds, and one canned upstream reply that
proposes one ``read_file`` call. Each stage runs N times on warm state (a re-sent history hits
the verdict memo, as it does for a real agent) and reports its median in microseconds; network,
uvicorn and starlette are not in these numbers — they are the same in the bare proxy. Not a test.

    .venv/bin/python benchmarks/gateway_stages.py [--n 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fak.config import Settings
from fak.gateway.accesslog import AccessLog
from fak.gateway.boundary import Boundary, RequestContext
from fak.gateway.http import json_response
from fak.gateway.metrics import Metrics
from fak.kernel import build_kernel
from fak.testing.upstream import _outcome, tool_call_turn
from fak.wire import openai_chat
from gateway import payloads


def _median_us(fn: Callable[[], Any], n: int) -> float:
    for _ in range(min(200, n)):
        fn()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def stages(payload: dict[str, Any], n: int) -> dict[str, float]:
    kernel = build_kernel(Settings.from_environ({}))
    metrics = Metrics(counters=lambda: kernel.counters, pollution_rate=lambda: 0.0, planner="proxy")
    lines: list[bytes] = []
    boundary = Boundary(kernel, metrics, AccessLog(lines.append))
    ctx = RequestContext(trace_id="gw-bench-1")
    raw = orjson.dumps(payload)
    reply = orjson.dumps(openai_chat.render_response(_outcome(tool_call_turn(), 0, "up")))

    doc = orjson.loads(raw)
    parsed = openai_chat.parse_request(doc)
    admitted, _, _ = boundary.admit_inbound(parsed, ctx)
    turn = openai_chat.parse_response(orjson.loads(reply))
    kept, adjudications = boundary.adjudicate(turn, ctx)
    out: dict[str, float] = {}
    out["decode request JSON"] = _median_us(lambda: orjson.loads(raw), n)
    out["parse wire -> canonical"] = _median_us(lambda: openai_chat.parse_request(doc), n)
    out["screen inbound results"] = _median_us(lambda: boundary.admit_inbound(parsed, ctx), n)
    out["render upstream request"] = _median_us(
        lambda: orjson.dumps(openai_chat.render_request(admitted)), n
    )
    out["parse upstream reply"] = _median_us(
        lambda: openai_chat.parse_response(orjson.loads(reply)), n
    )
    out["adjudicate proposed calls"] = _median_us(lambda: boundary.adjudicate(turn, ctx), n)
    outcome = Boundary.outcome(
        id="chatcmpl-fak-1",
        created=0,
        model="bench",
        turn=turn,
        kept=kept,
        adjudications=adjudications,
        admissions=(),
        usage_extra={},
        with_note=False,
    )
    out["render client response"] = _median_us(
        lambda: json_response(openai_chat.render_response(outcome)), n
    )
    lines.clear()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    results = {name: stages({**p, "stream": False}, args.n) for name, p in payloads().items()}
    names = list(next(iter(results.values())))
    print(f"{'stage':28}" + "".join(f"{p:>10}" for p in results))
    for stage in names:
        print(f"{stage:28}" + "".join(f"{results[p][stage]:9.1f}u" for p in results))
    print(f"{'total':28}" + "".join(f"{sum(r.values()):9.1f}u" for r in results.values()))
    out = Path(__file__).resolve().parent / "results" / "gateway_stages.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "gateway_stages", "n": args.n, "us": results}, indent=2)
    )


if __name__ == "__main__":
    main()
