"""Gateway overhead: direct vs bare pass-through proxy vs ``fak serve`` vs LiteLLM's proxy.

In one run, side by side, on loopback, against the same mock upstream (``fak.gateway.
mock_upstream --fixed-tool-call``: every answer is one proposed ``read_file`` call):

  direct        the client talks to the mock upstream itself (the floor)
  bare-httpx    a ~40-line starlette + httpx pass-through proxy (below): the floor any Python
                proxy pays; forwards bytes, adjudicates nothing
  bare-aiohttp  the same proxy with aiohttp as its upstream client
  fak           ``fak serve --base-url`` (aiohttp upstream client, access log to /dev/null):
                screens every inbound tool result, adjudicates every proposed call, renders the
                ``fak`` extension
  litellm       LiteLLM's proxy, installed by this script in a throwaway venv (skipped, and
                reported as skipped, when that install fails)

Payloads: ``small`` (one user turn and a tool list) and ``20kb`` (a prior tool call whose ~20 KB
benign result is in the history); each plain and streaming. Per cell: p50/p99 latency at
concurrency 1 and requests/s at concurrency 8. "added" = p50 minus the direct p50. Every server
runs in its own process; the load generator is an aiohttp client in this process. Every arm runs
the same server stack: uvicorn with uvloop + httptools when installed (the gateway extra brings
them; the LiteLLM venv gets them too), recorded as ``server_stack`` in the JSON. Prints a table
and writes benchmarks/results/gateway.json. Not a test.

    .venv/bin/python benchmarks/gateway.py [--requests 300] [--seconds 4] [--no-litellm]

``--shared`` runs one cell instead (docs/deploy.md): ``fak serve`` on the embedded stores (one
worker, memory CAS, file journal) vs on shared ones it starts itself (a throwaway redis-server
and PostgreSQL on loopback) with one and with two workers; the ``20kb`` payload (one screened
result, one adjudicated call, two journal rows per request), p50 at c=1 and requests/s at c=16,
side by side in one run. Writes benchmarks/results/gateway_shared.json.

    .venv/bin/python benchmarks/gateway.py --shared [--requests 300] [--seconds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import importlib.util
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "gateway.json"
LITELLM_VENV = Path(os.environ.get("TMPDIR", "/tmp")) / "fak-bench-litellm"
PY = sys.executable
LITELLM_KEY = "sk-fak-bench-5f0c2a9e8b7d4c3a1e6f"  # LiteLLM refuses to start without a master key
HEADERS = {"content-type": "application/json", "authorization": f"Bearer {LITELLM_KEY}"}

# -- the bare pass-through proxy (run with --bare-proxy) ----------------------------------------
BARE_PROXY = """
import sys, httpx, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

UP, CLIENT = sys.argv[1], sys.argv[3]

if CLIENT == "httpx":
    limits = httpx.Limits(max_keepalive_connections=64)
    client = httpx.AsyncClient(base_url=UP, timeout=60, limits=limits)

    async def forward(request):
        body = await request.body()
        req = client.build_request("POST", request.url.path, content=body,
                                   headers={"content-type": "application/json"})
        up = await client.send(req, stream=True)
        if b'"stream":true' in body:
            async def relay():
                async for chunk in up.aiter_raw():
                    yield chunk
                await up.aclose()
            return StreamingResponse(relay(), status_code=up.status_code,
                                     media_type=up.headers.get("content-type"))
        data = await up.aread()
        return Response(data, status_code=up.status_code, media_type=up.headers.get("content-type"))
else:
    import aiohttp
    session = None

    async def forward(request):
        global session
        if session is None:
            session = aiohttp.ClientSession(UP)
        body = await request.body()
        headers = {"content-type": "application/json"}
        up = await session.post(request.url.path, data=body, headers=headers)
        if b'"stream":true' in body:
            async def relay():
                async for chunk in up.content.iter_any():
                    yield chunk
                up.release()
            return StreamingResponse(relay(), status_code=up.status, media_type=up.content_type)
        data = await up.read()
        return Response(data, status_code=up.status, media_type=up.content_type)

app = Starlette(routes=[Route("/v1/chat/completions", forward, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False)
"""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file from the workspace",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def _benign_20kb() -> str:
    line = "row {i:04d}: the quarterly report lists revenue, costs and headcount by region.\n"
    out: list[str] = []
    i = 0
    while sum(map(len, out)) < 20_000:
        out.append(line.format(i=i))
        i += 1
    return "".join(out)


def payloads() -> dict[str, dict[str, Any]]:
    small = {
        "model": "bench",
        "messages": [{"role": "user", "content": "Read README.md and summarise it."}],
        "tools": TOOLS,
    }
    big = {
        "model": "bench",
        "messages": [
            {"role": "user", "content": "Read the report and summarise it."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"report.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": _benign_20kb()},
        ],
        "tools": TOOLS,
    }
    return {"small": small, "20kb": big}


# -- processes --------------------------------------------------------------------------------
def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            msg = f"server for {url} exited with {proc.returncode}"
            raise RuntimeError(msg)
        try:
            body = json.dumps(payloads()["small"]).encode()
            req = urllib.request.Request(url + "/chat/completions", body, HEADERS)
            with urllib.request.urlopen(req, timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    msg = f"server for {url} did not become ready"
    raise RuntimeError(msg)


def spawn(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def ensure_litellm() -> Path | None:
    """A throwaway venv with LiteLLM's proxy; None (with a reason printed) if it cannot be made."""
    exe = LITELLM_VENV / "bin" / "litellm"
    if exe.exists():
        return exe
    print(f"installing litellm[proxy] into {LITELLM_VENV} (throwaway venv) ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True)
        pip = [str(LITELLM_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
        # uvicorn[standard]: the same server stack (uvloop + httptools) as every other arm
        subprocess.run([*pip, "litellm[proxy]", "uvicorn[standard]"], check=True, timeout=1500)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"litellm unavailable: {exc}", flush=True)
        return None
    return exe if exe.exists() else None


def litellm_config(upstream: str, path: Path) -> Path:
    path.write_text(
        "model_list:\n"
        "  - model_name: bench\n"
        "    litellm_params:\n"
        "      model: openai/bench\n"
        f"      api_base: {upstream}/v1\n"
        "      api_key: bench-key\n"
        "general_settings:\n"
        f"  master_key: {LITELLM_KEY}\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "  drop_params: true\n"
    )
    return path


# -- load -------------------------------------------------------------------------------------
async def one(session: Any, url: str, body: bytes) -> float:
    t0 = time.perf_counter()
    async with session.post(url, data=body, headers=HEADERS) as r:
        data = await r.read()
        if r.status != 200:
            msg = f"{url} -> {r.status}: {data[:200]!r}"
            raise RuntimeError(msg)
    return time.perf_counter() - t0


async def latency(url: str, body: bytes, n: int) -> list[float]:
    import aiohttp

    async with aiohttp.ClientSession() as s:
        for _ in range(max(10, n // 10)):
            await one(s, url, body)
        return [await one(s, url, body) for _ in range(n)]


async def throughput(url: str, body: bytes, conc: int, seconds: float) -> float:
    import aiohttp

    done = 0
    stop = time.perf_counter() + seconds

    async def worker(s: Any) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await one(s, url, body)
            done += 1

    conn = aiohttp.TCPConnector(limit=conc)
    async with aiohttp.ClientSession(connector=conn) as s:
        for _ in range(conc):
            await one(s, url, body)
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(s) for _ in range(conc)))
        return done / (time.perf_counter() - t0)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-proxy":
        sys.argv = [sys.argv[0], *sys.argv[2:]]
        exec(compile(BARE_PROXY, "bare_proxy", "exec"), {"__name__": "__main__"})
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=300, help="sequential requests per cell")
    ap.add_argument("--seconds", type=float, default=4.0, help="duration of each c=8 run")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--only", default="", help="comma list of arms to run")
    ap.add_argument("--shared", action="store_true", help="the shared-stores cell only")
    args = ap.parse_args()
    if args.shared:
        shared_cell(args)
        return

    procs: list[subprocess.Popen[bytes]] = []
    arms: dict[str, str] = {}
    skipped: dict[str, str] = {}
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    try:
        up_port = free_port()
        procs.append(
            spawn([PY, "-m", "fak.testing.upstream", "--port", str(up_port), "--fixed-tool-call"])
        )
        upstream = f"http://127.0.0.1:{up_port}"
        arms["direct"] = upstream + "/v1"
        for client in ("httpx", "aiohttp"):
            p = free_port()
            procs.append(spawn([PY, __file__, "--bare-proxy", upstream, str(p), client]))
            arms[f"bare-{client}"] = f"http://127.0.0.1:{p}/v1"
        p = free_port()
        fak_cmd = [PY, "-m", "fak.cli.main", "serve", "--addr", f"127.0.0.1:{p}"]
        procs.append(spawn([*fak_cmd, "--base-url", upstream + "/v1", "--access-log", "stdout"]))
        arms["fak"] = f"http://127.0.0.1:{p}/v1"
        if not args.no_litellm:
            exe = ensure_litellm()
            if exe is None:
                skipped["litellm"] = "install failed"
            else:
                p = free_port()
                cfg = litellm_config(upstream, tmp / "fak-bench-litellm.yaml")
                env = {
                    "LITELLM_LOG": "ERROR",
                    "LITELLM_TELEMETRY": "False",
                    "DISABLE_ADMIN_UI": "True",
                }
                procs.append(
                    spawn(
                        [str(exe), "--config", str(cfg), "--port", str(p), "--num_workers", "1"],
                        env,
                    )
                )
                arms["litellm"] = f"http://127.0.0.1:{p}/v1"
        if args.only:
            keep = set(args.only.split(","))
            arms = {k: v for k, v in arms.items() if k in keep or k == "direct"}
        for name, url in list(arms.items()):
            try:
                wait_ready(url, procs[0], timeout=120 if name == "litellm" else 30)
            except RuntimeError as exc:
                skipped[name] = str(exc)
                del arms[name]
        results = run_all(arms, args)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    report(results, skipped, args)


def run_all(arms: dict[str, str], args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for pname, payload in payloads().items():
        for stream in (False, True):
            body = json.dumps({**payload, "stream": stream}).encode()
            cell: dict[str, dict[str, float]] = {}
            # interleave arms in rounds so drift hits them alike
            lat: dict[str, list[float]] = {a: [] for a in arms}
            rounds = 3
            for _ in range(rounds):
                for arm, url in arms.items():
                    lat[arm] += asyncio.run(
                        latency(url + "/chat/completions", body, args.requests // rounds)
                    )
            for arm, url in arms.items():
                rps = asyncio.run(
                    throughput(url + "/chat/completions", body, args.concurrency, args.seconds)
                )
                cell[arm] = {
                    "p50_ms": pct(lat[arm], 0.5) * 1000,
                    "p99_ms": pct(lat[arm], 0.99) * 1000,
                    "mean_ms": statistics.fmean(lat[arm]) * 1000,
                    "rps_c8": rps,
                }
            base = cell["direct"]["p50_ms"]
            for arm in cell:
                cell[arm]["added_p50_ms"] = cell[arm]["p50_ms"] - base
            rows.append({"payload": pname, "stream": stream, "arms": cell})
            print(f"done: {pname} stream={stream}", flush=True)
    return rows


def report(rows: list[dict[str, Any]], skipped: dict[str, str], args: argparse.Namespace) -> None:
    head = f"{'payload':7} {'stream':6} {'arm':13} {'p50 ms':>8} {'p99 ms':>8} "
    head += f"{'added':>7} {'rps c8':>8}"
    print(head)
    print("-" * len(head))
    for row in rows:
        for arm, m in row["arms"].items():
            print(
                f"{row['payload']:7} {row['stream']!s:6} {arm:13} {m['p50_ms']:8.2f} "
                f"{m['p99_ms']:8.2f} {m['added_p50_ms']:7.2f} {m['rps_c8']:8.0f}"
            )
    ratios: list[dict[str, Any]] = []
    for row in rows:
        arms = row["arms"]
        r: dict[str, Any] = {"payload": row["payload"], "stream": row["stream"]}
        if "fak" in arms:
            for bare in ("bare-httpx", "bare-aiohttp"):
                if bare in arms and arms[bare]["added_p50_ms"] > 0:
                    r[f"fak_added_over_{bare}"] = (
                        arms["fak"]["added_p50_ms"] / arms[bare]["added_p50_ms"]
                    )
        if "fak" in arms and "litellm" in arms:
            r["fak_rps_over_litellm"] = arms["fak"]["rps_c8"] / arms["litellm"]["rps_c8"]
        ratios.append(r)
    print()
    for r in ratios:
        parts = [f"{k}={v:.2f}" for k, v in r.items() if isinstance(v, float)]
        print(f"{r['payload']:7} stream={r['stream']!s:5} " + "  ".join(parts))
    for arm, why in skipped.items():
        print(f"skipped {arm}: {why}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "benchmark": "gateway",
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "platform": sys.platform,
                },
                "args": vars(args),
                "rows": rows,
                "ratios": ratios,
                "skipped": skipped,
                "litellm_version": _litellm_version(),
                "server_stack": _server_stack(),
            },
            indent=2,
        )
    )
    print(f"wrote {OUT.relative_to(ROOT)}")


# -- the shared-stores cell (--shared) ---------------------------------------------------------
def _stores(tmp: Path) -> tuple[str, str, list[list[str]]]:
    """Start redis-server and a PostgreSQL cluster in ``tmp``; (redis url, dsn, stop commands)."""
    rport, pport = free_port(), free_port()
    redis_cmd = [shutil.which("redis-server") or "redis-server", "--port", str(rport)]
    redis_cmd += ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp)]
    redis = spawn(redis_cmd)
    pg_bin = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1]).parent
    as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_pg:
        shutil.chown(tmp, "postgres")
    data = tmp / "pg"
    run = {"check": True, "capture_output": True, "timeout": 120}
    subprocess.run(
        [*as_pg, str(pg_bin / "initdb"), "-D", str(data), "-U", "fak", "-A", "trust"], **run
    )
    opts = f"-p {pport} -c listen_addresses=127.0.0.1 -k {tmp} -c max_connections=100"
    pg_ctl = [*as_pg, str(pg_bin / "pg_ctl"), "-D", str(data)]
    subprocess.run([*pg_ctl, "-o", opts, "-l", str(tmp / "pg.log"), "-w", "start"], **run)
    import psycopg

    with psycopg.connect(f"postgresql://fak@127.0.0.1:{pport}/postgres", autocommit=True) as c:
        c.execute("CREATE DATABASE fak")
    stops = [[*pg_ctl, "-m", "fast", "-w", "stop"], ["kill", str(redis.pid)]]
    return f"redis://127.0.0.1:{rport}/0", f"postgresql://fak@127.0.0.1:{pport}/fak", stops


def shared_cell(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fak-bench-shared-"))
    procs: list[subprocess.Popen[bytes]] = []
    stops: list[list[str]] = []
    arms: dict[str, str] = {}
    body = json.dumps({**payloads()["20kb"], "stream": False}).encode()
    conc = args.concurrency = 16
    try:
        redis_url, dsn, stops = _stores(tmp)
        up_port = free_port()
        procs.append(
            spawn([PY, "-m", "fak.testing.upstream", "--port", str(up_port), "--fixed-tool-call"])
        )
        upstream = f"http://127.0.0.1:{up_port}/v1"
        arms["direct"] = upstream
        shared = ["--cas-url", redis_url, "--journal-url", dsn]
        for name, extra, env in (
            ("embedded-1w", [], {"FAK_AUDIT_JOURNAL": str(tmp / "audit.jsonl")}),
            ("shared-1w", shared, {}),
            ("shared-2w", [*shared, "--workers", "2"], {}),
        ):
            p = free_port()
            cmd = [PY, "-m", "fak.cli.main", "serve", "--addr", f"127.0.0.1:{p}"]
            cmd += ["--base-url", upstream, "--access-log", "off", *extra]
            procs.append(spawn(cmd, env))
            arms[name] = f"http://127.0.0.1:{p}/v1"
            wait_ready(arms[name], procs[-1])
        lat: dict[str, list[float]] = {a: [] for a in arms}
        for _ in range(3):  # interleaved rounds, so drift hits every arm alike
            for arm, url in arms.items():
                lat[arm] += asyncio.run(
                    latency(url + "/chat/completions", body, args.requests // 3)
                )
        cell: dict[str, dict[str, float]] = {}
        for arm, url in arms.items():
            rps = asyncio.run(throughput(url + "/chat/completions", body, conc, args.seconds))
            cell[arm] = {"p50_ms": pct(lat[arm], 0.5) * 1000, "p99_ms": pct(lat[arm], 0.99) * 1000}
            cell[arm]["rps_c16"] = rps
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        for stop in stops:
            subprocess.run(stop, capture_output=True, check=False, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    base = cell["direct"]["p50_ms"]
    print(f"{'arm':12} {'p50 ms':>8} {'p99 ms':>8} {'added':>7} {'rps c16':>8}")
    for arm, m in cell.items():
        m["added_p50_ms"] = m["p50_ms"] - base
        print(
            f"{arm:12} {m['p50_ms']:8.2f} {m['p99_ms']:8.2f} {m['added_p50_ms']:7.2f} "
            f"{m['rps_c16']:8.0f}"
        )
    emb, one, two = cell["embedded-1w"], cell["shared-1w"], cell["shared-2w"]
    ratios = {
        "shared_store_cost_p50_ms": one["p50_ms"] - emb["p50_ms"],
        "rps_shared_2w_over_embedded_1w": two["rps_c16"] / emb["rps_c16"],
        "rps_shared_1w_over_embedded_1w": one["rps_c16"] / emb["rps_c16"],
    }
    print("  ".join(f"{k}={v:.2f}" for k, v in ratios.items()))
    out = OUT.with_name("gateway_shared.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "cpus": os.cpu_count()}
    out.write_text(
        json.dumps(
            {
                "benchmark": "gateway --shared",
                "machine": machine,
                "args": vars(args),
                "payload": "20kb",
                "arms": cell,
                "ratios": ratios,
                "server_stack": _server_stack(),
            },
            indent=2,
        )
    )
    print(f"wrote {out.relative_to(ROOT)}")


def _server_stack() -> dict[str, bool]:
    """Which fast uvicorn pieces this interpreter (and so the fak and bare arms) runs with."""
    return {m: importlib.util.find_spec(m) is not None for m in ("uvloop", "httptools")}


def _litellm_version() -> str:
    py = LITELLM_VENV / "bin" / "python"
    if not py.exists():
        return ""
    try:
        out = subprocess.run(
            [str(py), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (subprocess.SubprocessError, OSError):
        return ""
    return out.stdout.strip()


if __name__ == "__main__":
    main()
