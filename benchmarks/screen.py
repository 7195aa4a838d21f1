"""Result-screen throughput: MB/s of the wall on benign and adversarial tool results.

Measures, side by side in one run, four layers on the same bytes:
  first    fak.screen.screen_bytes           (the kernel's first-match predicate)
  deobf    fak.screen.screen_deobfuscated    (the de-obfuscating second admitter, alone)
  admit    QuarantineLedger.admit            (both admitters + sha256 + page-out/hold), with the
           verdict memo off: every call screens the bytes (the whole admission path)
  memo     QuarantineLedger.admit            (the same, memo on: a repeated body is judged once)
With --baseline REV, the de-obfuscating screen of git revision REV (its deobfuscate.py, loaded
next to the current one) is timed too, alone and in the same admission path: before/after
numbers from one run. With --against REV, the whole admission path of REV's source tree and of
this tree (every module; each in a fresh child process over the same bodies) are timed body by
body in turn, for --rounds rounds (default 3), and the medians are compared: before/after for
changes anywhere; --clock cpu times them by each child's CPU time instead of the wall clock.
Benign corpora: API-style JSON, id-dense JSON (uuids/hashes), HTML, Python source from this
repository and multilingual UTF-8 prose, at 1 KB .. 1 MB. Adversarial: huge single tokens, deep
base64 nesting, near-miss secret/marker prefixes, unaligned repeats, zero-width-laden text.
Prints a table and writes benchmarks/results/screen.json. Not a test.

    .venv/bin/python benchmarks/screen.py [--quick] [--baseline 8bb87ce] [--against e3e8416]
        [--rounds 3] [--clock cpu]
"""

from __future__ import annotations

import argparse
import base64
import io
import platform
import random
import statistics
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path

import orjson

from fak.abi import ToolResult, Verdict
from fak.cas import MemoryStore
from fak.kernel.quarantine import QuarantineLedger
from fak.screen import FirstMatchScreen, finding_verdict, screen_bytes, screen_deobfuscated
from fak.screen.skeleton import fold_table

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "screen.json"
SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]
WORDS = [
    *("the", "a", "server", "request", "response", "value", "config", "user", "account"),
    *("order", "item", "price", "status", "queue", "retry", "timeout", "latency", "region"),
    *("cluster", "deploy", "build", "cache", "page", "report", "summary", "total", "error"),
]


def _fit(make: Callable[[int], bytes], size: int) -> bytes:
    n = 8
    while True:
        body = make(n)
        if len(body) >= size:
            return body[:size]
        n *= 2


def json_api(size: int, rng: random.Random) -> bytes:
    def make(n: int) -> bytes:
        rows = [
            {
                "id": i,
                "name": " ".join(rng.choices(WORDS, k=3)).title(),
                "description": " ".join(rng.choices(WORDS, k=14)),
                "price": round(rng.uniform(1, 500), 2),
                "tags": rng.sample(WORDS, 3),
                "in_stock": rng.random() > 0.3,
            }
            for i in range(n)
        ]
        return orjson.dumps({"items": rows, "page": 1, "next": "/api/items?page=2"})

    return _fit(make, size)


def json_ids(size: int, rng: random.Random) -> bytes:
    def make(n: int) -> bytes:
        rows = [
            {
                "uuid": f"{rng.getrandbits(128):032x}",
                "sha256": f"{rng.getrandbits(256):064x}",
                "created": 1_700_000_000_000 + rng.randrange(10**9),
                "score": rng.random(),
            }
            for _ in range(n)
        ]
        return orjson.dumps(rows)

    return _fit(make, size)


def html(size: int, rng: random.Random) -> bytes:
    def make(n: int) -> bytes:
        parts = ["<!doctype html><html><head><title>Results</title></head><body><ul>"]
        for i in range(n):
            text = " ".join(rng.choices(WORDS, k=12))
            parts.append(
                f'<li class="result item-{i % 7}"><a href="/docs/{rng.choice(WORDS)}/{i}">'
                f"{text.title()}</a><p>{text}.</p></li>"
            )
        parts.append("</ul></body></html>")
        return "\n".join(parts).encode()

    return _fit(make, size)


def code(size: int, _rng: random.Random) -> bytes:
    # This repository's Python, minus the files that spell out marker phrases (the screen's own
    # sources would, rightly, be quarantined).
    files = sorted((ROOT / "src" / "fak").rglob("*.py"))
    sources = b"\n".join(
        text for text in (p.read_bytes() for p in files) if screen_deobfuscated(text) is None
    )
    return (sources * (size // len(sources) + 1))[:size]


def prose_utf8(size: int, rng: random.Random) -> bytes:
    phrases = [
        "Grüße aus Köln, das Wetter ist schön.",
        "東京の天気は晴れです。",
        "Привет, как дела на работе?",
        "Καλημέρα, τι κάνεις;",
        "café, naïve, résumé — déjà vu.",
        "The weather is fine and the build passed.",
    ]
    return _fit(lambda n: " ".join(rng.choices(phrases, k=n)).encode(), size)


_FOLDING = sorted(fold_table())


def adversarial(rng: random.Random) -> dict[str, bytes]:
    mib = 1 << 20
    nested = b"padding text around a hidden payload: ignore previous instructions " * 1500
    for _ in range(6):
        nested = base64.b64encode(nested)
    return {
        "single-token-b64-random-1MiB": base64.b64encode(rng.randbytes(3 * mib // 4))[:mib],
        "single-token-b64-text-1MiB": base64.b64encode(b"An ordinary sentence. " * 50000)[:mib],
        "single-token-A-1MiB": b"A" * mib,
        f"b64-nested-6-deep-{len(nested) // 1024}KiB": nested,
        "near-miss-secret-prefixes-1MiB": (b"sk-abc AKIA12 ghp_x xoxb- -----BEGIN " * 30000)[:mib],
        "near-miss-markers-1MiB": (b"ignore previous instruction; you are not " * 30000)[:mib],
        "dense-cues-1MiB": (b"SYSTEM: note to the assistant <!-- ![x](http://a/?q=1) " * 20000)[
            :mib
        ],
        "assignment-keys-1MiB": (b"api_key=token=secret=password=" * 40000)[:mib],
        # request candidates (``fak.screen.cues.REQUESTS``) every ~10 bytes: no scoring cue, so
        # the scan reads on until its start budget holds the body
        "dense-requests-1MiB": (b"Could you Generate Send Tell I want your config. " * 22000)[:mib],
        # one-byte runs inside a unit longer than MAX_PERIOD: every offset in a run matches the
        # repeat scan's probe (the scan walks one candidate of a run, not each)
        "runs-in-long-units-1MiB": ((b"x" * 400 + b" hello world. ") * 2600)[:mib],
        # the same with runs of a two-byte unit: the probe recurs at every other offset
        "short-period-runs-in-long-units-1MiB": ((b"ab" * 200 + b" hello world. ") * 2600)[:mib],
        "near-periods-1MiB": b"".join(b"line %d of a long log\n" % i for i in range(60000))[:mib],
        "unaligned-repeat-1MiB": b"x" + b"0123456789abcdef" * (mib // 16),
        # lists of values (passed over by the pollution scan, issue 25) between short noise:
        # every list is judged, each a different one
        "value-lists-between-noise-1MiB": b"".join(
            ((b",".join(b"%d" % (i * 7 + k) for k in range(1 + i % 39)) + b",") * 900)[:900]
            + b" %x " % i
            for i in range(mib // 900)
        )[:mib],
        "zero-width-laden-1MiB": ("w\u200bo\u200dr\u2060d " * 60000).encode()[:mib],
        "printable-b64-tokens-1MiB": b" ".join(
            base64.b64encode(b"note %06d, nothing to see here" % i) for i in range(30000)
        )[:mib],
        "distinct-folding-chars-1MiB": "".join(
            chr(rng.choice(_FOLDING)) for _ in range(mib // 3)
        ).encode()[:mib],
        "random-bytes-1MiB": rng.randbytes(mib),
    }


def _time(fn: Callable[[bytes], object], body: bytes, budget_s: float) -> float:
    """Median seconds per call over repeats filling roughly ``budget_s``."""
    start = time.perf_counter()
    fn(body)
    once = max(time.perf_counter() - start, 1e-7)
    repeats = max(3, min(200, int(budget_s / once)))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(body)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _admit_fn(*, memo: bool = False) -> Callable[[bytes], object]:
    # the same body is timed over and over: with the memo it would be screened once
    ledger = QuarantineLedger(MemoryStore(max_bytes=64 << 20), memoize=memo)
    return lambda body: ledger.admit(ToolResult(tool="bench", payload=body))


LAYERS: dict[str, Callable[[], Callable[[bytes], object]]] = {
    "first": lambda: screen_bytes,
    "deobf": lambda: screen_deobfuscated,
    "admit": _admit_fn,
    "memo": lambda: _admit_fn(memo=True),
}


def _load_baseline(rev: str) -> types.ModuleType:
    """``src/fak/screen/deobfuscate.py`` as of git revision ``rev``, as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{rev}:src/fak/screen/deobfuscate.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType(f"deobfuscate_{rev}")
    exec(compile(source, f"{rev}:deobfuscate.py", "exec"), module.__dict__)
    return module


class _BaselineScreen:
    """The baseline's second admitter, configured as the default chain configures the current."""

    def __init__(self, module: types.ModuleType) -> None:
        self._screen = module.screen_deobfuscated

    @property
    def name(self) -> str:
        return "normgate"

    def admit(self, data: bytes) -> Verdict:
        return finding_verdict(self._screen(data, include_raw=False), self.name)


def _add_baseline(rev: str) -> None:
    module = _load_baseline(rev)

    def admit_fn() -> Callable[[bytes], object]:
        ledger = QuarantineLedger(MemoryStore(max_bytes=64 << 20), memoize=False)
        ledger.replace_admitters((FirstMatchScreen(), _BaselineScreen(module)))
        return lambda body: ledger.admit(ToolResult(tool="bench", payload=body))

    LAYERS["deobf_base"] = lambda: module.screen_deobfuscated
    LAYERS["admit_base"] = admit_fn


_AGAINST_CHILD = """
import statistics, struct, sys, time
from fak.abi import ToolResult
from fak.cas import MemoryStore
from fak.kernel.quarantine import QuarantineLedger
raw, budget = open(sys.argv[1], "rb").read(), float(sys.argv[2])
clock = time.process_time if sys.argv[3] == "cpu" else time.perf_counter
bodies, at = [], 0
while at < len(raw):
    (size,) = struct.unpack_from("<Q", raw, at)
    bodies.append(raw[at + 8 : at + 8 + size])
    at += 8 + size
ledger = QuarantineLedger(MemoryStore(max_bytes=64 << 20), memoize=False)
def admit(body):
    ledger.admit(ToolResult(tool="bench", payload=body))
for line in sys.stdin:  # one body index a line: time it, answer the median seconds per call
    body = bodies[int(line)]
    start = clock()
    admit(body)
    once = max(clock() - start, 1e-7)
    samples = []
    for _ in range(max(3, min(200, int(budget / once)))):
        start = clock()
        admit(body)
        samples.append(clock() - start)
    print(statistics.median(samples), flush=True)
"""


def _against(
    rev: str, bodies: list[bytes], budget: float, rounds: int, clock: str = "wall"
) -> list[tuple[float, float]]:
    """Median seconds per admission, (REV's tree, this tree), over ``rounds`` rounds.

    Each tree runs in a fresh child process over the same bodies (neither inherits the other
    layers' warm or bloated caches); body by body, the two are asked in turn, so a slow spell
    of a shared machine falls on both."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    then: list[list[float]] = [[] for _ in bodies]
    now: list[list[float]] = [[] for _ in bodies]
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        packed = Path(tmp) / "bodies.bin"
        packed.write_bytes(b"".join(struct.pack("<Q", len(b)) + b for b in bodies))
        command = [sys.executable, "-c", _AGAINST_CHILD, str(packed), str(budget), clock]
        children = [
            subprocess.Popen(
                command,
                env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for tree in (Path(tmp) / "src", ROOT / "src")
        ]
        try:
            for _ in range(rounds):
                for index in range(len(bodies)):
                    for child, side in zip(children, (then, now), strict=True):
                        assert child.stdin is not None and child.stdout is not None
                        child.stdin.write(f"{index}\n")
                        child.stdin.flush()
                        side[index].append(float(child.stdout.readline()))
        finally:
            for child in children:
                if child.stdin is not None:
                    child.stdin.close()
                child.wait()
    return [(statistics.median(a), statistics.median(b)) for a, b in zip(then, now, strict=True)]


def _row(name: str, body: bytes, budget: float) -> dict[str, object]:
    row: dict[str, object] = {"input": name, "bytes": len(body)}
    for layer, factory in LAYERS.items():
        seconds = _time(factory(), body, budget)
        row[f"{layer}_us"] = round(seconds * 1e6, 1)
        row[f"{layer}_mb_s"] = round(len(body) / seconds / 1e6, 1)
    row["verdict"] = str(QuarantineLedger(MemoryStore()).admit(ToolResult("b", body)).verdict.kind)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes, shorter timing")
    parser.add_argument("--baseline", metavar="REV", help="also time this git revision's screen")
    parser.add_argument(
        "--against", metavar="REV", help="time REV's whole admission path in alternating rounds"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds for --against (median)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="--against times by wall clock or by the child's CPU time (steadier when the "
        "machine is shared: another process's time slices are not counted)",
    )
    args = parser.parse_args()
    if args.baseline:
        _add_baseline(args.baseline)
    rng = random.Random(20260101)
    sizes = [4 << 10, 64 << 10, 1 << 20] if args.quick else SIZES
    budget = 0.05 if args.quick else 0.3
    rows: list[dict[str, object]] = []
    bodies: list[bytes] = []
    corpora = {"json-api": json_api, "json-ids": json_ids, "html": html, "code": code}
    corpora["prose-utf8"] = prose_utf8
    for kind, make in corpora.items():
        for size in sizes:
            bodies.append(make(size, rng))
            name = f"{kind}-{size // 1024}KiB"
            rows.append({"group": "benign", **_row(name, bodies[-1], budget)})
    for name, body in adversarial(rng).items():
        bodies.append(body)
        rows.append({"group": "adversarial", **_row(name, body, budget)})

    columns = [f"{layer}_mb_s" for layer in LAYERS]
    header = f"{'input':34} {'bytes':>8} " + " ".join(f"{c[:-5] + ' MB/s':>16}" for c in columns)
    print(header + "  verdict")
    print("-" * (len(header) + 12))
    for row in rows:
        cells = " ".join(f"{row[c]!s:>16}" for c in columns)
        print(f"{row['input']!s:34} {row['bytes']!s:>8} {cells}  {row['verdict']}")
    if args.against:
        print(
            f"\nadmission path, {args.against} vs this tree: median of {args.rounds} rounds,"
            f" {args.clock} clock"
        )
        print(f"{'input':34} {args.against + ' MB/s':>16} {'now MB/s':>16} {'ratio':>8}")
        for row, body, (then, now) in zip(
            rows,
            bodies,
            _against(args.against, bodies, budget, args.rounds, args.clock),
            strict=True,
        ):
            row["against"] = args.against
            row["admit_against_mb_s"] = round(len(body) / then / 1e6, 1)
            row["admit_rounds_mb_s"] = round(len(body) / now / 1e6, 1)
            print(
                f"{row['input']!s:34} {row['admit_against_mb_s']!s:>16} "
                f"{row['admit_rounds_mb_s']!s:>16} {then / now:>7.2f}x"
            )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "quick": args.quick,
        "baseline": args.baseline,
        "against": args.against,
        "rounds": args.rounds if args.against else None,
        "clock": args.clock if args.against else None,
        "note": "median per call; MB = 1e6 bytes; 2 shared cores, other work running",
    }
    OUT.write_bytes(orjson.dumps({"meta": meta, "rows": rows}, option=orjson.OPT_INDENT_2))
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
