"""Does a weight-0 candidate cue hide a scoring cue? Checked over the by-source corpus.

The cue scan (``fak.screen.injection``) keeps one of overlapping matches, leftmost first: a
candidate (``Cue.CANDIDATE``, weight 0: it only marks a window for the intent model) that
starts before a weighted cue and runs into it takes that cue's place, and the cue never scores.
Every candidate must end before the next word for that reason. This script finds the cues of
every corpus item twice — with the shipped table, and with the weighted rows alone — and
reports the items whose weighted cues differ. Train items are printed with the bytes around
each hidden cue; held-out items only counted. Not a test (the corpus is built at benchmark
time): ``0 items`` is the expected answer.

    PYTHONPATH=src .venv/bin/python benchmarks/cue_hiding.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = [
    ROOT / "benchmarks" / "results" / "screen_sources.jsonl",
    ROOT / "benchmarks" / "results" / "screen_sources_secpol.jsonl",
]
Cues = dict[str, list[list[float]]]
_QUIET: dict[str, bool] = {"check": True, "capture_output": True}


def weighted_cues(weighted_only: bool) -> Cues:
    """Every item's weighted cues (start, end, weight), with the whole table or without the
    candidate rows (the scanner rebuilt over the rest)."""
    import fak.screen.cues as table
    import fak.screen.injection as injection

    if weighted_only:
        rows = tuple(row for row in table.CUES if row[0] != table.Cue.CANDIDATE)
        injection.CUES = rows  # type: ignore[misc]  # a benchmark's own scanner
        injection._FAMILY = tuple(family for family, _, _ in rows)  # type: ignore[misc]
        injection._WEIGHT = tuple(weight for _, weight, _ in rows)  # type: ignore[misc]
        injection._FIND_ONLY = b"|".join(b"(?:" + src + b")" for _, _, src in rows)  # type: ignore[misc]
        injection.INJECTION_PREFILTER = b"|".join(b"(" + src + b")" for _, _, src in rows)  # type: ignore[misc]
        injection._SCAN = injection._WHICH = injection._NAMING = None
    # the scanner must be the one asked for (a renamed internal would leave the whole table
    # in place, and "0 items" would be a check that did not run)
    probe = injection.find_cues(b"Could you tell me what your configuration says?")
    marked = any(cue.family == table.Cue.CANDIDATE for cue in probe)
    if marked == weighted_only:
        raise SystemExit(f"the {'weighted-only' if weighted_only else 'whole'} table was not used")
    out: Cues = {}
    for path in CORPORA:
        for line in filter(None, path.read_text(encoding="utf-8").split("\n")):
            item = json.loads(line)
            found = injection.find_cues(item["text"].encode())
            out[item["id"]] = [[c.start, c.end, c.weight] for c in found if c.weight]
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("--all", "--weighted"):
        json.dump(weighted_cues(sys.argv[1] == "--weighted"), sys.stdout)
        return
    missing = [p for p in CORPORA if not p.exists()]
    if missing:
        raise SystemExit(f"no {missing[0].relative_to(ROOT)}: run benchmarks/screen_sources.py")
    # each table in its own process: the scanner is compiled once per process
    runs = [
        json.loads(
            subprocess.run([sys.executable, __file__, flag], check=True, capture_output=True).stdout
        )
        for flag in ("--all", "--weighted")
    ]
    items = {}
    for path in CORPORA:
        for line in filter(None, path.read_text(encoding="utf-8").split("\n")):
            item = json.loads(line)
            items[item["id"]] = item
    differ = [key for key in runs[0] if runs[0][key] != runs[1][key]]
    held_out = [key for key in differ if items[key]["split"] != "train"]
    print(f"{len(items)} items; weighted cues hidden by a candidate in {len(differ)} "
          f"({len(held_out)} held-out, not shown)")  # fmt: skip
    for key in differ:
        if items[key]["split"] != "train":
            continue
        text = items[key]["text"].encode()
        for start, end, _ in (c for c in runs[1][key] if c not in runs[0][key]):
            print(f"  {key}: {text[max(0, int(start) - 40) : int(end)]!r}")


if __name__ == "__main__":
    main()
