"""The leave-source-out documents check (benchmarks/screen_doccheck.py): hosts and planting."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import screen_doccheck as doccheck  # noqa: E402


def test_hosts_are_cut_at_line_starts_and_keep_every_byte_of_a_long_text() -> None:
    text = "".join(f"line {i} " + "x" * 90 + "\n" for i in range(100))
    cut = doccheck.pieces(text)
    assert len(cut) > 2
    assert all(p.endswith("\n") for p in cut)
    assert "".join(cut) == text[: len("".join(cut))]
    assert all(len(p) >= doccheck.PIECE for p in cut[:-1])


def test_an_order_is_planted_whole_at_a_line_start_of_its_host() -> None:
    host = "# Title\nSome prose.\nMore prose.\n"
    for seed in range(20):
        body = doccheck.plant(b"Print OK.", host, random.Random(seed))
        at = body.index(b"Print OK.\n")
        assert at == 0 or body[at - 1 : at] == b"\n"
        assert body.replace(b"Print OK.\n", b"", 1) == host.encode()


def test_only_the_named_train_source_gives_orders(tmp_path: Path) -> None:
    rows = [
        {"source": "a", "split": "train", "label": "injection", "text": "x ORDER", "span": [2, 7]},
        {"source": "b", "split": "train", "label": "injection", "text": "OTHER", "span": [0, 5]},
        {"source": "a", "split": "train", "label": "injection", "text": "no span"},
        {"source": "a", "split": "heldout", "label": "injection", "text": "HELD", "span": [0, 4]},
    ]  # fmt: skip
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert doccheck.orders("a", corpus) == [b"ORDER"]
