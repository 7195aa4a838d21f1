"""Result-screen quality: caught % per label and family, false positives per benign family.

Reads the labelled corpus benchmarks/data/screen_corpus.jsonl (built by
benchmarks/screen_corpus.py) and runs every item through the kernel's admission path (the
quarantine ledger with the shipped result chain, told the item's tool; a text that is JSON with
escapes screened as the model reads it too, as the result gate does) unless --layer picks a
bare screen (``first``, ``deobf``) or the ledger on the bytes alone (``bytes``). An attack item
counts as caught when the ledger holds it (QUARANTINE / DENY) or, with span quarantine, when
the flagged spans remove the planted bytes. The ``tune`` split is the one the detectors were
developed against; ``heldout`` is reported separately and never tuned on.
Prints a table and writes benchmarks/results/screen_quality.json. Not a test.

    .venv/bin/python benchmarks/screen_quality.py [--split heldout] [--misses]

``--by-source`` reads instead the corpus benchmarks/screen_sources.py builds from text other
people wrote (red-team packages and ordinary files, installed from the registries), and reports
caught % / false positives per split (``train`` sources the detectors may be fitted on,
``heldout`` sources never tuned on), per source and per family:

    .venv/bin/python benchmarks/screen_sources.py --install   # once
    .venv/bin/python benchmarks/screen_quality.py --by-source [--split train]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from fak.abi import ToolResult, VerdictKind
from fak.cas import MemoryStore
from fak.kernel.gate import as_read
from fak.kernel.quarantine import QuarantineLedger
from fak.screen import screen_bytes, screen_deobfuscated

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "data" / "screen_corpus.jsonl"
OUT = ROOT / "benchmarks" / "results" / "screen_quality.json"
HELD = frozenset({VerdictKind.QUARANTINE, VerdictKind.DENY})


def ledger_judge(*, read: bool = True) -> Callable[[dict[str, str]], tuple[bool, str]]:
    """The kernel's admission of an item as a door hands it over: the ledger with the shipped
    chain, and (``read``) what the model reads of a text that is JSON with escapes screened
    too (``fak.kernel.gate.as_read``, as the result gate does); without it, the bytes alone."""
    ledger = QuarantineLedger(MemoryStore(max_bytes=0))
    view = as_read if read else (lambda result: result)

    def judge(item: dict[str, str]) -> tuple[bool, str]:
        adm = ledger.admit(view(ToolResult(tool=item["tool"], payload=item["text"].encode())))
        return adm.verdict.kind in HELD, str(adm.verdict.meta.get("detector", ""))

    return judge


def _bare(fn: Callable[[bytes], object]) -> Callable[[dict[str, str]], tuple[bool, str]]:
    def judge(item: dict[str, str]) -> tuple[bool, str]:
        hit = fn(item["text"].encode())
        return hit is not None, str(getattr(hit, "detector", ""))

    return judge


LAYERS = {
    "admit": ledger_judge,
    "bytes": lambda: ledger_judge(read=False),
    "first": lambda: _bare(screen_bytes),
    "deobf": lambda: _bare(screen_deobfuscated),
}


def evaluate(items: list[dict[str, str]], judge: Callable[[dict[str, str]], tuple[bool, str]]):
    table: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: [0, 0]))
    )
    misses: list[tuple[str, str, str, str]] = []
    for item in items:
        held, detector = judge(item)
        for family in ("*", item["family"]):
            cell = table[item["split"]][item["label"]][family]
            cell[0] += held
            cell[1] += 1
        attack = item["label"] != "benign"
        if held != attack:
            misses.append(
                (item["split"], item["id"], item["label"] + "/" + item["family"], detector)
            )
    return table, misses


SOURCES = ROOT / "benchmarks" / "results" / "screen_sources.jsonl"
SECPOL = ROOT / "benchmarks" / "results" / "screen_sources_secpol.jsonl"  # secrets, pollution
SOURCES_OUT = ROOT / "benchmarks" / "results" / "screen_quality_sources.json"


def by_source(layer: str, families: bool, misses: bool, split: str = "all") -> None:
    """Caught % (attacks) and held % (benign) per split, source and family (``split``: one
    split's rows only, e.g. ``train`` while a change is made, so held-out rows stay unread)."""
    if not SOURCES.exists():
        raise SystemExit(f"no {SOURCES.relative_to(ROOT)}: run benchmarks/screen_sources.py first")
    items = [json.loads(line) for line in SOURCES.read_text(encoding="utf-8").split("\n") if line]
    if SECPOL.exists():  # written beside it by screen_sources.py (kept apart from screen_train)
        items += [
            json.loads(line) for line in SECPOL.read_text(encoding="utf-8").split("\n") if line
        ]
    if split in ("train", "heldout"):
        items = [item for item in items if item["split"] == split]
    judge = LAYERS[layer]()
    cells: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    wrong: list[str] = []
    for item in items:
        held, detector = judge(item)
        keys = [("*", "*"), (item["source"], "*")] + (
            [(item["source"], item["family"])] if families else []
        )
        for source, family in keys:
            cell = cells[(item["split"], item["label"], source, family)]
            cell[0] += held
            cell[1] += 1
        if held != (item["label"] != "benign") and item["split"] == "train":
            wrong.append(f"  {item['id']} {item['label']}/{item['family']} {detector}")
    print(f"layer: {layer}   corpus: {SOURCES.relative_to(ROOT)} ({len(items)} items)")
    print(f"{'split':8} {'label':10} {'source':24} {'family':34} {'held':>5} {'of':>5} {'rate':>7}")
    out: dict[str, object] = {}
    order = {"train": 0, "heldout": 1}
    for key in sorted(
        cells, key=lambda k: (order[k[0]], k[1], k[2] != "*", k[2], k[3] != "*", k[3])
    ):
        held, n = cells[key]
        rate = 100.0 * held / n
        split, label, source, family = key
        print(f"{split:8} {label:10} {source:24} {family:34} {held:5} {n:5} {rate:6.1f}%")
        out["/".join(key)] = {"held": held, "n": n, "rate": round(rate, 2)}
    if misses:
        print("\ntrain-split errors (held-out errors are not listed):")
        print("\n".join(wrong))
    SOURCES_OUT.parent.mkdir(parents=True, exist_ok=True)
    SOURCES_OUT.write_text(json.dumps({"layer": layer, "rows": out}, indent=2) + "\n")
    print(f"\nwrote {SOURCES_OUT.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-source", action="store_true", help="the corpus from others' text")
    parser.add_argument("--layer", choices=sorted(LAYERS), default="admit")
    parser.add_argument("--split", choices=["tune", "train", "heldout", "all"], default="all")
    parser.add_argument("--misses", action="store_true", help="list tune-split errors")
    parser.add_argument("--families", action="store_true", help="per-family rows too")
    args = parser.parse_args()
    if args.by_source:
        by_source(args.layer, args.families, args.misses, args.split)
        return
    items = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    if args.split != "all":
        items = [i for i in items if i["split"] == args.split]
    table, misses = evaluate(items, LAYERS[args.layer]())
    print(f"layer: {args.layer}   corpus: {CORPUS.relative_to(ROOT)} ({len(items)} items)")
    print(f"{'split':8} {'label':10} {'family':16} {'held':>5} {'of':>4} {'rate':>7}  target")
    targets = {"secret": ">= 97% caught", "injection": ">= 70% caught",
               "pollution": ">= 90% caught", "benign": "<= 2% held (FP)"}  # fmt: skip
    out: dict[str, object] = {}
    for split in ("tune", "heldout"):
        for label in ("secret", "injection", "pollution", "benign"):
            fams = table[split][label]
            if not fams:
                continue
            for family in sorted(fams, key=lambda f: (f != "*", f)):
                if family != "*" and not args.families:
                    continue
                held, n = fams[family]
                rate = 100.0 * held / n
                note = targets[label] if family == "*" else ""
                print(f"{split:8} {label:10} {family:16} {held:5} {n:4} {rate:6.1f}%  {note}")
                out[f"{split}/{label}/{family}"] = {"held": held, "n": n, "rate": round(rate, 2)}
    if args.misses:
        print("\ntune-split errors (held-out errors are not listed):")
        for split, ident, what, detector in misses:
            if split == "tune":
                print(f"  {ident} {what} {detector}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"layer": args.layer, "rows": out}, indent=2) + "\n")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
