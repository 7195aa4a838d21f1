"""Judges a change to the intent recipe on the train sources alone: five folds, split by source.

Each fold leaves out a fixed group of train sources (injection and benign, ``FOLDS``), fits the
recipe (``benchmarks/screen_train.py``, same flags) on the rest, sets its decision logit on the
rest's benign items as the trainer does, and runs the left-out items through the kernel's
admission path (``benchmarks/screen_quality.py``'s ledger judge, with that fold's model). The
check-only train sources (never fitted on: recorded API replies, changelogs, chat, translations)
are run under every fold's model. So every number is out of fold: text from sources the fit never
saw, like the held-out split, without reading the held-out split. Two recipes are compared by
running this twice, side by side:

    .venv/bin/python benchmarks/screen_folds.py --tag main --jobs 2 --seeds 3
    .venv/bin/python benchmarks/screen_folds.py --tag sup3 --jobs 2 --seeds 3 --support 3

One SGD order's luck moves the totals by ~20 injections and ~10 benign holds (docs/claims.md,
"Folds on the train sources"): ``--seeds N`` fits every fold with N orders and prints each
order's totals beside their mean.

Prints per source caught/held counts and totals; writes benchmarks/results/screen_folds-TAG.json.
Not a test.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from fak.screen import intent

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import screen_train  # noqa: E402
from screen_quality import ledger_judge  # noqa: E402
from screen_sources import CHECK_ONLY  # noqa: E402

FOLDS: tuple[frozenset[str], ...] = (
    frozenset({"aegisrt", "agentfuzz", "promptinject", "debian-docs", "json-fixtures-a-m"}),
    frozenset(
        {"aicu_scanner", "agentred", "agent_injection_bench", "manpages-l10n", "pkg-docs-a-m"}
    ),
    frozenset({"pyrit", "agentccx", "agentprobe", "py-source-a-m", "ipi-benign-controls"}),
    frozenset({"deepteam", "inspect_evals", "redteam-docs-train", "pkg-readme-a-m"}),
    frozenset({"promptfoo", "agentdojo", "py-stdlib-docs", "redteam-docs-more"}),
)
"""Train sources grouped by hand so each fold leaves out 331-593 injection items (of 2,181) and
some benign text of a different kind; every fitted train source is in exactly one fold."""

OUT = ROOT / "benchmarks" / "results"


@functools.cache
def _corpus() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The train split of the by-source corpus and the generated items, read once (``main``
    reads them before forking, so the fold processes share them)."""
    every = [i for i in screen_train.load_items(screen_train.SOURCES) if i["split"] == "train"]
    return every, screen_train.generated_items()


def _fold(job: tuple[int, list[str]]) -> dict[str, Any]:
    """One fold: fit without its sources, judge its items and the check-only items."""
    index, argv = job
    args = screen_train.recipe_parser().parse_args(argv)
    screen_train.CONTEXT = not args.no_context
    left_out = FOLDS[index]
    every, generated = _corpus()
    fitted = screen_train.fitted_sources()
    items = [i for i in every if i["source"] in fitted - left_out]
    rows, _ = screen_train.cut_rows(items, generated, args)
    weights, bias = screen_train.fit_recipe(rows, args)
    model = intent.IntentModel(weights, bias, 0.0, {})
    threshold, _, _ = screen_train.calibrate(model, items + generated, args)
    judged = [i for i in every if i["source"] in left_out or i["source"] in CHECK_ONLY]
    held: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    misses: list[str] = []
    fates: Counter[str] = Counter()  # where a missed injection ends (``screen_train.fate``)
    with screen_train.model_at(model, threshold):
        judge = ledger_judge()
        for item in judged:
            hit, _ = judge(item)
            key = f"{item['source']}/{item['label']}"
            seen[key] += 1
            held[key] += hit
            if hit != (item["label"] != "benign") and item["source"] in left_out:
                misses.append(str(item["id"]))
                if item["label"] != "benign":
                    fates[screen_train.fate(model, threshold, item)] += 1
    return {
        "fold": index,
        "threshold": threshold,
        "held": held,
        "seen": seen,
        "misses": misses,
        "fates": fates,
    }


def _totals(results: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str]]:
    """Held and seen counts per ``source/label`` over the folds of one fit order."""
    held: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for result in results:
        held.update(result["held"])
        seen.update(result["seen"])
    return held, seen


def main() -> None:
    parser = screen_train.recipe_parser()
    parser.description = __doc__.splitlines()[0]
    parser.add_argument("--tag", default="run", help="names the results file")
    parser.add_argument("--jobs", type=int, default=1, help="folds fitted side by side")
    parser.add_argument(
        "--seeds", type=int, default=1, help="SGD orders (--order-seed on from its value)"
    )
    args, _ = parser.parse_known_args()
    argv = list(sys.argv[1:])
    for flag in ("--tag", "--jobs", "--seeds", "--order-seed"):  # the rest is the recipe's
        while flag in argv:
            at = argv.index(flag)
            del argv[at : at + 2]
    seeds = [args.order_seed + k for k in range(args.seeds)]
    _corpus()
    jobs = [(i, [*argv, "--order-seed", str(seed)]) for seed in seeds for i in range(len(FOLDS))]
    if args.jobs > 1:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            results = pool.map(_fold, jobs, chunksize=1)
    else:
        results = [_fold(job) for job in jobs]
    per_seed = [_totals(results[k * len(FOLDS) : (k + 1) * len(FOLDS)]) for k in range(len(seeds))]
    held, seen = _totals(results)
    runs = len(seeds) * len(FOLDS)  # a check-only item is judged once per fold and order
    print(f"recipe: {' '.join(argv) or '(defaults)'}; SGD order seeds {seeds}")
    print("thresholds: " + ", ".join(f"{r['threshold']:.2f}" for r in results))
    for key in sorted(seen):
        if key.split("/")[0] in CHECK_ONLY:
            print(f"  {key:40} {held[key] / runs:7.1f} / {seen[key] // runs:5}"
                  "  (check-only, mean of folds and orders)")  # fmt: skip
        else:
            print(f"  {key:40} {held[key] / len(seeds):7.1f} / {seen[key] // len(seeds):5}")

    def total(counts: tuple[Counter[str], Counter[str]], label: str, check: bool) -> list[float]:
        h, n = counts
        keys = [
            k for k in n if k.endswith("/" + label) and (k.split("/")[0] in CHECK_ONLY) == check
        ]
        scale = len(FOLDS) if check else 1
        return [sum(h[k] for k in keys) / scale, sum(n[k] for k in keys) / scale]

    rows = {
        "injection": ("injection", False),
        "benign": ("benign", False),
        "check-only benign": ("benign", True),
    }
    summary: dict[str, dict[str, Any]] = {}
    for name, (label, check) in rows.items():
        each = [total(counts, label, check) for counts in per_seed]
        of = each[0][1]
        mean = sum(h for h, _ in each) / len(each)
        spread = f" (orders: {', '.join(f'{h:.1f}' for h, _ in each)})" if len(each) > 1 else ""
        print(f"out of fold {name}: {mean:.1f}/{of:.0f} ({100 * mean / of:.2f} %){spread}")
        summary[name] = {"mean": mean, "of": of, "per_order": [h for h, _ in each]}
    fates = sum((Counter(r["fates"]) for r in results), Counter())
    print(f"missed injections' fates (all orders): {dict(sorted(fates.items()))}")
    out = OUT / f"screen_folds-{args.tag}.json"
    out.write_text(
        json.dumps(
            {
                "recipe": argv,
                "order_seeds": seeds,
                "totals": summary,
                "sources": {k: [held[k], seen[k]] for k in sorted(seen)},
                "fates": fates,
                "misses": sorted({m for r in results for m in r["misses"]}),
            },
            indent=1,
        )
        + "\n"
    )
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
