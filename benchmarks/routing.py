"""Routing over two upstreams, one failing half the time: ``fak serve --upstreams`` vs LiteLLM's
proxy with the same config file, side by side in one run.

Upstreams (each its own process, on loopback): ``good`` (``fak.testing.upstream
--fixed-tool-call``: every answer is one proposed ``read_file`` call) and ``flaky`` (the same
answer, but each request gets an HTTP 500 with probability 1/2, from a seeded coin). One LiteLLM
config names both as deployments of model ``bench`` (``simple-shuffle``, ``num_retries: 2``); fak
reads the very same file with ``--upstreams-ignore-unsupported`` (it prints LiteLLM's
``general_settings`` and ``litellm_settings`` keys as unsupported and runs without them). Cells:

  single     fak only, ``--base-url`` the good upstream: no router (what routing itself adds)
  retry      ``allowed_fails`` so high nothing cools down: every failure is retried on the
             other deployment (the cost of a fallback on the live path)
  cooldown   ``allowed_fails: 1``, ``cooldown_time: 1``: a failure parks the flaky deployment

Per arm and cell: p50/p99 latency and the success rate over ``--requests`` sequential requests
(c=1, interleaved: one request to each arm in turn, so load elsewhere on the machine hits every
arm alike), then requests/s at c=8 over ``--seconds``, one arm after the other; ``direct`` is the
good upstream alone (the floor). LiteLLM's proxy comes from a throwaway venv
(benchmarks/gateway.py's ``ensure_litellm``, or ``--litellm PATH`` to an installed ``litellm``
executable). Prints a table, writes benchmarks/results/routing.json. Not a test.

    .venv/bin/python benchmarks/routing.py [--requests 300] [--seconds 4] [--no-litellm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gateway as bench  # benchmarks/gateway.py: processes, payloads, the LiteLLM venv

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "routing.json"
PY = sys.executable

FLAKY = """
import random, sys, uvicorn
from starlette.responses import Response
from fak.testing.upstream import MockUpstream, tool_call_turn

inner = MockUpstream(fixed=tool_call_turn(), keep=1).app
coin = random.Random(7)

async def app(scope, receive, send):
    if scope["type"] == "http" and scope["path"].endswith("/chat/completions"):
        if coin.random() < 0.5:
            while (await receive()).get("more_body"):
                pass
            r = Response(b'{"error":{"message":"flaky"}}', 500, media_type="application/json")
            return await r(scope, receive, send)
    return await inner(scope, receive, send)

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def config(good: str, flaky: str, cell: str) -> str:
    fails = 1_000_000 if cell == "retry" else 1
    return (
        "model_list:\n"
        "  - model_name: bench\n"
        "    litellm_params:\n"
        "      model: openai/bench\n"
        f"      api_base: {flaky}/v1\n"
        "      api_key: bench-key\n"
        "    model_info:\n"
        "      id: flaky\n"
        "  - model_name: bench\n"
        "    litellm_params:\n"
        "      model: openai/bench\n"
        f"      api_base: {good}/v1\n"
        "      api_key: bench-key\n"
        "    model_info:\n"
        "      id: good\n"
        "router_settings:\n"
        "  routing_strategy: simple-shuffle\n"
        "  num_retries: 2\n"
        f"  allowed_fails: {fails}\n"
        "  cooldown_time: 1\n"
        "general_settings:\n"
        f"  master_key: {bench.LITELLM_KEY}\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
    )


async def _one(session: Any, url: str, body: bytes) -> tuple[float, bool]:
    t0 = time.perf_counter()
    async with session.post(url, data=body, headers=bench.HEADERS) as r:
        await r.read()
        ok = r.status == 200
    return time.perf_counter() - t0, ok


async def interleaved(
    urls: dict[str, str], body: bytes, n: int
) -> dict[str, tuple[list[float], int]]:
    """``n`` sequential requests to every arm, one arm after the other in each round."""
    import aiohttp

    out: dict[str, tuple[list[float], int]] = {name: ([], 0) for name in urls}
    async with aiohttp.ClientSession() as s:
        for url in urls.values():
            for _ in range(10):
                await _one(s, url + "/chat/completions", body)
        for _ in range(n):
            for name, url in urls.items():
                t, ok = await _one(s, url + "/chat/completions", body)
                lat, good = out[name]
                lat.append(t)
                out[name] = (lat, good + ok)
    return out


async def concurrent(url: str, body: bytes, conc: int, seconds: float) -> tuple[float, float]:
    import aiohttp

    done = ok = 0
    stop = time.perf_counter() + seconds

    async def worker(s: Any) -> None:
        nonlocal done, ok
        while time.perf_counter() < stop:
            _, good = await _one(s, url, body)
            done += 1
            ok += good

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc)) as s:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(s) for _ in range(conc)))
        return done / (time.perf_counter() - t0), ok / max(1, done)


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            msg = f"server for {url} exited with {proc.returncode}"
            raise RuntimeError(msg)
        try:
            body = json.dumps(bench.payloads()["small"]).encode()
            req = urllib.request.Request(url + "/chat/completions", body, bench.HEADERS)
            with urllib.request.urlopen(req, timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    msg = f"server for {url} did not become ready"
    raise RuntimeError(msg)


def _litellm_version(exe: Path | None) -> str | None:
    if exe is None:
        return None
    code = "import importlib.metadata as m; print(m.version('litellm'))"
    try:
        out = subprocess.run(
            [str(exe.parent / "python"), "-c", code], capture_output=True, text=True, timeout=60
        )
    except (subprocess.SubprocessError, OSError):
        return ""
    return out.stdout.strip()


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--litellm", default="", help="an installed litellm executable to use")
    args = ap.parse_args()
    body = json.dumps(bench.payloads()["small"]).encode()
    procs: list[subprocess.Popen[bytes]] = []
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    litellm = None
    if not args.no_litellm:
        litellm = Path(args.litellm) if args.litellm else bench.ensure_litellm()
        if litellm is None:
            skipped["litellm"] = "install failed"
    try:
        gp, fp = bench.free_port(), bench.free_port()
        good, flaky = f"http://127.0.0.1:{gp}", f"http://127.0.0.1:{fp}"
        procs.append(
            bench.spawn([PY, "-m", "fak.testing.upstream", "--port", str(gp), "--fixed-tool-call"])
        )
        procs.append(bench.spawn([PY, "-c", FLAKY, str(fp)]))
        wait_up(good + "/v1", procs[0], 30)
        urls = {"direct": good + "/v1"}
        with tempfile.TemporaryDirectory() as tmp:
            for cell in ("single", "retry", "cooldown"):
                fak = [PY, "-m", "fak.cli.main", "serve", "--access-log", "off"]
                arms: dict[str, list[str]] = {}
                if cell == "single":  # one upstream, no router: what routing itself costs
                    arms["fak"] = [*fak, "--base-url", good + "/v1", "--addr"]
                else:
                    cfg = Path(tmp) / f"{cell}.yaml"
                    cfg.write_text(config(good, flaky, cell))
                    arms["fak"] = [*fak, "--upstreams", str(cfg), "--upstreams-ignore-unsupported"]
                    arms["fak"].append("--addr")
                    if litellm is not None:
                        arms["litellm"] = [str(litellm), "--config", str(cfg), "--num_workers", "1"]
                for arm, cmd in arms.items():
                    port = bench.free_port()
                    where = [f"127.0.0.1:{port}"] if arm == "fak" else ["--port", str(port)]
                    env = {"LITELLM_LOG": "ERROR", "LITELLM_TELEMETRY": "False"}
                    proc = bench.spawn([*cmd, *where], env)
                    procs.append(proc)
                    url = f"http://127.0.0.1:{port}/v1"
                    try:
                        wait_up(url, proc, 180 if arm == "litellm" else 30)
                    except RuntimeError as exc:
                        skipped[f"{arm}/{cell}"] = str(exc)
                        continue
                    urls[f"{arm}/{cell}"] = url
            # c=1: one request to each arm in turn, so a burst of load elsewhere hits every arm
            latencies = asyncio.run(interleaved(urls, body, args.requests))
            for name, (lat, ok) in latencies.items():
                results[name] = {
                    "p50_ms": pct(lat, 0.5) * 1e3,
                    "p99_ms": pct(lat, 0.99) * 1e3,
                    "mean_ms": statistics.fmean(lat) * 1e3,
                    "success": ok / args.requests,
                }
            for name, url in urls.items():
                if name == "direct":
                    continue
                rps, ok_c = asyncio.run(
                    concurrent(url + "/chat/completions", body, args.concurrency, args.seconds)
                )
                results[name][f"rps_c{args.concurrency}"] = rps
                results[name][f"success_c{args.concurrency}"] = ok_c
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    c = args.concurrency
    print(
        f"{'arm/cell':<18}{'p50 ms':>9}{'p99 ms':>9}{'ok c=1':>9}{f'rps c={c}':>10}{f'ok c={c}':>9}"
    )
    for name, r in results.items():
        print(
            f"{name:<18}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{r['success']:>9.1%}"
            + (f"{r[f'rps_c{c}']:>10.0f}{r[f'success_c{c}']:>9.1%}" if f"rps_c{c}" in r else "")
        )
    for name, why in skipped.items():
        print(f"{name}: SKIPPED ({why})")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "results": results,
                "skipped": skipped,
                "requests": args.requests,
                "seconds": args.seconds,
                "python": platform.python_version(),
                "litellm_version": _litellm_version(litellm),
            },
            indent=2,
        )
    )
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
