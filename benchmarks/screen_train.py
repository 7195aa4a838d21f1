"""Fits the screen's intent model (``fak.screen.intent``) on the train sources only.

Reads the by-source corpus (``benchmarks/screen_sources.py``; only items whose source is in
the ``train`` split) and the tune half of the generated corpus
(``benchmarks/data/screen_corpus.jsonl``), cuts every item into overlapping windows (a positive
window is the planted injection's own text), describes each by its concept features and its
class n-grams and its word n-grams (those the windows of ``--support`` sources hold), and fits
two logistic regressions (AdaGrad SGD, L2, fixed seed; each source's windows weigh the same in
total): one over everything, one over concepts and word classes only (no words, so no source's
vocabulary); the shipped model is their average (``--ensemble``, the second's share; one linear
model, since the average of linear models is linear). The decision logit is the smallest that
holds the train benign items' false positives to ``--max-fp``, on the windows the runtime reads
(around the cheap pass's cues). Held-out sources are never read. Writes
``src/fak/screen/intent_weights.json.gz`` with its provenance. Deterministic for a given corpus.

    .venv/bin/python benchmarks/screen_sources.py && .venv/bin/python benchmarks/screen_train.py
    .venv/bin/python benchmarks/screen_train.py --validate pyrit   # leave one train source out
    .venv/bin/python benchmarks/screen_train.py --verify   # the shipped file, refit byte for byte

``--validate`` also prints each held-out injection's fate at run time: held by the cue score,
no window selected by the cue pass, windows selected but none addressed and ordering, windows
read but none over the planted text, read over it but scored low, or held by the model.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import hashlib
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from fak.screen import intent
from fak.screen.injection import find_cues, score_injection
from fak.screen.intent import WINDOW, context, describe

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from corpus_pins import DEBIAN_PINS, PYTHON_PINS  # noqa: E402
from screen_sources import BENIGN_SOURCES, CHECK_ONLY, PACKAGES  # noqa: E402
from screen_sources import OUT as SOURCES  # noqa: E402
from screen_synth import generate as synthesize  # noqa: E402

GENERATED = ROOT / "benchmarks" / "data" / "screen_corpus.jsonl"
WEIGHTS = ROOT / "src" / "fak" / "screen" / "intent_weights.json.gz"
SEED = 25
STRIDE = WINDOW // 2
CONTEXT = True  # ``--no-context``: windows are described without the body around them


def load_items(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def windows(
    item: dict[str, object], carrier: bool = True
) -> list[tuple[str, int, dict[str, float]]]:
    """(window text, label, the body's ``context`` around it) of one item; label -1 means
    unknown (skipped). A window that holds a planted injection gives two positives: the window
    as the runtime reads it (carrier around the injection; not with ``carrier=False``) and the
    injection's own words (with the same context)."""
    data = str(item["text"]).encode()
    span = item.get("span")
    out: list[tuple[str, int, dict[str, float]]] = []
    for lo in range(0, max(1, len(data) - STRIDE), STRIDE):
        piece = data[lo : lo + WINDOW]
        text = piece.decode("utf-8", errors="ignore")
        around = context(data, lo, lo + len(piece)) if CONTEXT else {}
        if item["label"] == "benign":
            out.append((text, 0, around))
            continue
        if isinstance(span, list):
            s, e = int(span[0]), int(span[1])
            overlap = min(e, lo + WINDOW) - max(s, lo)
            label = 1 if overlap >= min(e - s, 120) else (0 if overlap <= 0 else -1)
            if label == 1:  # the injection's own words, not the carrier's around it
                own = data[max(s, lo) : min(e, lo + WINDOW)].decode("utf-8", errors="ignore")
                out.append((own, 1, around))
                if not carrier:
                    continue
        else:  # generated corpus: no span recorded; a window with cues is the injection
            label = 1 if score_injection(piece, 0.5) else -1
        out.append((text, label, around))
    return out


def fit(
    rows: list[tuple[dict[str, float], int, str]],
    epochs: int,
    l2: float,
    l2_grams: float,
    bags: int = 1,
    seed: int = SEED,
) -> tuple[dict[str, float], float]:
    """The average of ``bags`` fits (``_fit_once``) that differ only in the order SGD visits
    the windows (seeds ``seed``, ``seed + 1``, ...): one order's luck moves single weights, and
    with them what a check-only source holds, more than the corpus does."""
    total: dict[str, float] = {}
    bias = 0.0
    for bag in range(bags):
        weights, one_bias = _fit_once(rows, epochs, l2, l2_grams, seed + bag)
        for key, value in weights.items():
            total[key] = total.get(key, 0.0) + value / bags
        bias += one_bias / bags
    return total, bias


def _fit_once(
    rows: list[tuple[dict[str, float], int, str]],
    epochs: int,
    l2: float,
    l2_grams: float,
    seed: int,
) -> tuple[dict[str, float], float]:
    """Logistic regression, AdaGrad SGD over sparse binary features. Each (source, label) pair
    weighs the same in total: one source's many windows do not decide what injections are."""
    rng = random.Random(seed)
    groups = Counter((source, label) for _, label, source in rows)
    per_label = Counter(label for _, label in groups)
    total = len(rows)
    weight_of = {key: total / (2 * per_label[key[1]] * n) for key, n in groups.items()}
    weights: dict[str, float] = {}
    grads: dict[str, float] = {}
    bias, bias_grad = 0.0, 1e-8
    rate = 0.2
    order = list(range(len(rows)))
    for _ in range(epochs):
        rng.shuffle(order)
        for index in order:
            feats, label, source = rows[index]
            z = bias + sum(weights.get(f, 0.0) * v for f, v in feats.items())
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            g = (p - label) * weight_of[(source, label)]
            for f, v in feats.items():
                w = weights.get(f, 0.0)
                step = g * v + (l2 if "_" in f else l2_grams) * w  # n-grams hold no "_"
                acc = grads.get(f, 1e-8) + step * step
                grads[f] = acc
                weights[f] = w - rate * step / math.sqrt(acc)
            bias_grad += g * g
            bias -= rate * g / math.sqrt(bias_grad)
    return weights, bias


PINS = (PYTHON_PINS, DEBIAN_PINS)


def _fingerprint(items: list[dict[str, object]]) -> dict[str, str]:
    """Per train source fitted on, its item count and a digest of its items (id, label, text):
    the corpus is rebuilt from files on the machine (pinned: ``benchmarks/corpus_pins.py``), so
    a build that differs shows here by source, not only as different weights."""
    digests: dict[str, hashlib._Hash] = {}
    counts: Counter[str] = Counter()
    for item in items:
        source = str(item["source"])
        counts[source] += 1
        digest = digests.setdefault(source, hashlib.sha256())
        for part in (item["id"], item["label"], item["text"]):
            digest.update(str(part).encode() + b"\0")
    return {s: f"{counts[s]} {digests[s].hexdigest()[:16]}" for s in sorted(digests)}


def _best(model: intent.IntentModel, data: bytes) -> float:
    """The largest logit of a candidate window of ``data`` (the runtime's candidates)."""
    spots = [(c.start, c.end, c.weight) for c in find_cues(data)]
    with model_at(model, -1e9):
        hits = intent.read_windows(data, spots)
    return max((h.logit for h in hits), default=-1e9)


def fate(model: intent.IntentModel, threshold: float, item: dict[str, object]) -> str:
    """Where one injection item ends at the runtime (the first screen's raw-byte path): held by
    the cue score; no window selected by the cue pass (the gate's recall ceiling); windows
    selected but none speaks to someone and orders something; windows read but none over the
    planted span; read over it but scored low; held by the model."""
    data = str(item["text"]).encode()
    if score_injection(data):
        return "cue"
    spots = [(c.start, c.end, c.weight) for c in find_cues(data)]
    groups = intent.candidate_groups(data, spots)
    if not groups:
        return "no-window"
    span = item.get("span")
    s, e = (int(span[0]), int(span[1])) if isinstance(span, list) else (0, len(data))
    best, best_on = -math.inf, -math.inf
    for group in groups:
        lo, hi = intent.window_of(data, group)
        logit = model.logit(
            data[lo:hi].decode("utf-8", errors="ignore"), around=context(data, lo, hi)
        )
        if all(intent._REQUEST.fullmatch(data[a:b]) for a, b in group):
            logit -= intent.REQUEST_PRIOR  # as the runtime: a window only requests selected
        best = max(best, logit)
        if min(hi, e) - max(lo, s) > 0:
            best_on = max(best_on, logit)
    if best >= threshold:
        return "model" if best_on >= threshold else "model-off-span"
    if best == -math.inf:
        return "gated"
    if best_on == -math.inf:
        return "off-span"
    return "low"


def _show(model: intent.IntentModel, threshold: float, item: dict[str, object]) -> None:
    """Print a held item's windows over the threshold and their heaviest features."""
    data = str(item["text"]).encode()
    spots = [(c.start, c.end, c.weight) for c in find_cues(data)]
    print(f"  HELD {item['id']} ({len(data)} bytes)")
    for group in intent.candidate_groups(data, spots):
        lo, hi = intent.window_of(data, group)
        text = data[lo:hi].decode("utf-8", errors="ignore")
        around = context(data, lo, hi)
        logit = model.logit(text, around=around)
        if logit < threshold:
            continue
        found, words = describe(text)
        found.update(around)
        terms = [(model.weights.get(k, 0.0) * v, k) for k, v in found.items()]
        terms += [(model.weights.get(g, 0.0), g) for g in words]
        top = sorted(terms, reverse=True)[:8]
        print(f"    window {lo}-{hi} logit {logit:.2f}: {text[:300]!r}")
        print(f"    top: {[(k, round(w, 2)) for w, k in top]}")


@contextlib.contextmanager
def model_at(model: intent.IntentModel, threshold: float) -> Iterator[None]:
    """The runtime's ``load_model`` answers ``model`` at this threshold, for a while."""
    saved = intent.load_model
    patched = dataclasses.replace(model, threshold=threshold)
    intent.load_model = lambda: patched  # type: ignore[assignment]
    try:
        yield
    finally:
        intent.load_model = saved


def fitted_sources() -> set[str]:
    """The sources a fit may read: the ``train`` split, less the check-only ones."""
    train_sources = {name for name, (_, _, split) in PACKAGES.items() if split == "train"}
    train_sources |= {name for name, (_, split) in BENIGN_SOURCES.items() if split == "train"}
    # train-side precision checks, never fitted on (``screen_sources.CHECK_ONLY``): the recorded
    # API replies (fitting on them was tried and rejected, docs/claims.md) and the changelogs
    return train_sources - CHECK_ONLY


def generated_items() -> list[dict[str, object]]:
    """The tune half of fak's generated corpus (benign and injection items)."""
    labels = ("benign", "injection")
    return [i for i in load_items(GENERATED) if i["split"] == "tune" and i["label"] in labels]


Row = tuple[dict[str, float], int, str]


def cut_rows(
    items: list[dict[str, object]], generated: list[dict[str, object]], args: argparse.Namespace
) -> tuple[list[Row], set[str]]:
    """The fit's rows (features, label, source) from the items' windows and the composed
    pairs, and the n-gram vocabulary they may use."""
    cut: list[tuple[dict[str, float], set[str], int, str]] = []
    for item in items + generated:
        source = str(item.get("source", "generated"))
        kept = [w for w in windows(item, not args.own_only) if w[1] >= 0]
        positives = [w for w in kept if w[1] == 1][: args.max_positive]
        for text, label, around in [w for w in kept if w[1] == 0] + positives:
            found, words = describe(text)
            found.update(around)
            cut.append((found, words, label, source))
    for lang, label, text in synthesize(SEED, args.synth):
        cut.append((*describe(text), int(label == "injection"), f"synth-{lang}"))
    # An n-gram is a feature only when it is common language: seen in the windows of
    # ``--support`` sources or more (generated text counts one source per language). One
    # source's topics (a jailbreak persona's name, a suite's IBAN) never become evidence.
    used: dict[str, set[str]] = {}
    for _, found, _, source in cut:
        for gram in found:
            used.setdefault(gram, set()).add(source)
    vocab = {g for g, s in used.items() if len(s) >= args.support}
    rows = [({**f, **dict.fromkeys(found & vocab, 1.0)}, y, s) for f, found, y, s in cut]
    return rows, vocab


def fit_recipe(rows: list[Row], args: argparse.Namespace) -> tuple[dict[str, float], float]:
    """The shipped recipe's fit of ``rows``: the full model, averaged (``--ensemble``) with one
    over concepts and word classes only (no words), trimmed to ``--keep`` rounded weights."""
    weights, bias = fit(rows, args.epochs, args.l2, args.l2_grams, args.bags, args.order_seed)
    if args.ensemble:  # average with a model of concepts and word classes only (no words)
        shape_rows = [({k: v for k, v in f.items() if "_" in k}, y, s) for f, y, s in rows]
        shape, shape_bias = fit(
            shape_rows, args.epochs, args.l2, args.l2_grams, args.bags, args.order_seed
        )
        mix = args.ensemble
        weights = {
            k: (1 - mix) * weights.get(k, 0.0) + mix * shape.get(k, 0.0)
            for k in weights.keys() | shape.keys()
        }
        bias = (1 - mix) * bias + mix * shape_bias
    ranked = sorted(weights.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[: args.keep]
    return {f: round(w, 3) for f, w in ranked if abs(w) >= 0.005}, bias


def calibrate(
    model: intent.IntentModel, items: list[dict[str, object]], args: argparse.Namespace
) -> tuple[float, list[float], list[float]]:
    """The decision logit: the smallest (at least ``--min-logit``) that holds the benign
    items' false positives to ``--max-fp``; with the best logits of the benign and attack
    items (benign sorted high first)."""
    benign_best: list[float] = []
    attack_best: list[float] = []
    for item in items:
        best = _best(model, str(item["text"]).encode())
        (benign_best if item["label"] == "benign" else attack_best).append(best)
    benign_best.sort(reverse=True)
    allowed = int(args.max_fp * len(benign_best))
    return max(args.min_logit, benign_best[allowed] + 0.01), benign_best, attack_best


def recipe_parser() -> argparse.ArgumentParser:
    """The recipe's flags (``screen_folds.py`` passes its own through to them)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--bags", type=int, default=1, help="fits averaged (SGD orders)")
    parser.add_argument(
        "--order-seed", type=int, default=SEED, help="seed of the SGD orders (a fit's luck)"
    )
    parser.add_argument("--l2", type=float, default=1e-3, help="L2 on the concept features")
    parser.add_argument("--l2-grams", type=float, default=1e-3, help="L2 on the n-grams")
    parser.add_argument("--max-fp", type=float, default=0.002)
    parser.add_argument("--support", type=int, default=2, help="sources an n-gram needs")
    parser.add_argument("--synth", type=int, default=6000, help="generated pairs (screen_synth)")
    parser.add_argument("--keep", type=int, default=40000, help="weights kept (largest first)")
    parser.add_argument("--own-only", action="store_true", help="positives: injection text only")
    parser.add_argument(
        "--min-logit", type=float, default=2.4, help="decision logit at least (the shipped: 2.4)"
    )
    parser.add_argument("--max-positive", type=int, default=3, help="positive windows per item")
    parser.add_argument(
        "--ensemble", type=float, default=0.5, help="share of the words-free model in the mix"
    )
    parser.add_argument("--validate", default="", help="hold this train source out and report it")
    parser.add_argument("--dry-run", action="store_true", help="do not write the weights")
    parser.add_argument("--show", action="store_true", help="print the held validation items")
    parser.add_argument("--no-context", action="store_true", help="no ``context`` features")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="refit and compare with the shipped file byte for byte (exit 1 if they differ)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=WEIGHTS,
        help="where to write the weights (with --validate: "
        "the fit without that source, for benchmarks/screen_doccheck.py)",
    )
    return parser


def main() -> None:
    args = recipe_parser().parse_args()
    global CONTEXT
    CONTEXT = not args.no_context

    train_sources = fitted_sources()
    items = [
        i for i in load_items(SOURCES) if i["split"] == "train" and i["source"] in train_sources
    ]
    assert all(i["source"] in train_sources for i in items)
    validate = [i for i in items if i["source"] == args.validate]
    items = [i for i in items if i["source"] != args.validate]
    generated = generated_items()
    rows, vocab = cut_rows(items, generated, args)
    positives_n = sum(y for _, y, _ in rows)
    print(f"windows: {len(rows)} ({positives_n} positive), {len(vocab)} n-grams")
    corpus = _fingerprint(items)
    print(f"corpus (items, digest) by source: {corpus}")
    weights, bias = fit_recipe(rows, args)
    print(f"context weights: {sorted((k, w) for k, w in weights.items() if k[:4] == 'ctx_')}")
    model_doc: dict[str, object] = {"weights": weights, "bias": round(bias, 4), "threshold": 0.0}
    model = intent.IntentModel(weights, bias, 0.0, {})
    threshold, benign_best, attack_best = calibrate(model, items + generated, args)
    caught = sum(1 for b in attack_best if b >= threshold)
    read = sum(1 for b in attack_best if b > -1e9)
    print(f"train attacks with a window read: {read}/{len(attack_best)}")
    print(f"threshold {threshold:.3f}; train attacks caught "
          f"{caught}/{len(attack_best)}; train benign over it "
          f"{sum(1 for b in benign_best if b >= threshold)}/{len(benign_best)}")  # fmt: skip
    if validate:
        best = {}
        for item in validate:
            best[item["id"]] = _best(model, str(item["text"]).encode())
        held = [i for i in validate if best[i["id"]] >= threshold]
        seen = [i for i in validate if best[i["id"]] > -1e9]
        print(f"validation source {args.validate}: a window read in {len(seen)}/{len(validate)}")
        logits = sorted((round(best[i["id"]], 2) for i in seen), reverse=True)
        print(
            f"  its logits: {logits}; train benign top: {[round(b, 2) for b in benign_best[:12]]}"
        )
        print(f"validation source {args.validate}: {len(held)}/{len(validate)} held "
              f"({', '.join(sorted({str(i['label']) for i in validate}))})")  # fmt: skip
        if args.show:
            for item in held:
                _show(model, threshold, item)
        fates = Counter(fate(model, threshold, i) for i in validate if i["label"] != "benign")
        print(f"  injections' fates: {dict(sorted(fates.items()))}")
    if args.dry_run or (validate and args.out == WEIGHTS):
        return
    model_doc["threshold"] = round(threshold, 3)
    model_doc["provenance"] = {
        "fitted_by": "benchmarks/screen_train.py",
        "command": ".venv/bin/python benchmarks/screen_sources.py --install && "
        ".venv/bin/python benchmarks/screen_train.py",
        "check": ".venv/bin/python benchmarks/corpus_pins.py --check",
        "train_sources": sorted(train_sources),
        "packages": {
            n: {"pin": p, "licence": lic} for n, (p, lic, s) in PACKAGES.items() if s == "train"
        },
        "benign_sources": {n: lic for n, (lic, _) in BENIGN_SOURCES.items() if n in train_sources},
        "generated": "benchmarks/data/screen_corpus.jsonl, tune split (fak's own generator); "
        "benchmarks/screen_synth.py (composed here, ten languages)",
        "items": len(items) + len(generated),
        "corpus": corpus,
        "pins": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in PINS},
        "python": ".".join(map(str, sys.version_info[:3])),  # py-stdlib-docs is its stdlib
        "windows": len(rows),
        # a flag at the value files had before it existed (one order, seed 25) is not recorded,
        # so the shipped file refits byte for byte
        "params": {
            k: v
            for k, v in vars(args).items()
            if k not in ("out", "verify") and (k, v) not in (("bags", 1), ("order_seed", SEED))
        },
        "seed": SEED,
    }
    blob = gzip.compress(
        json.dumps(model_doc, sort_keys=True, separators=(",", ":")).encode(), 9, mtime=0
    )
    if args.verify:
        shipped = WEIGHTS.read_bytes()
        same = blob == shipped
        print(f"refit {hashlib.sha256(blob).hexdigest()[:16]} ({len(blob)} bytes), shipped "
              f"{hashlib.sha256(shipped).hexdigest()[:16]} ({len(shipped)} bytes): "
              f"{'identical' if same else 'DIFFERENT'}")  # fmt: skip
        if not same:
            raise SystemExit(
                "the shipped weights do not reproduce here: run benchmarks/corpus_pins.py "
                "--check, and compare the provenance's per-source corpus digests"
            )
        return
    args.out.write_bytes(blob)
    print(f"wrote {args.out} ({len(blob)} bytes, {len(weights)} weights)")


if __name__ == "__main__":
    main()
