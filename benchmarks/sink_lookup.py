"""Sink lookups against a large tool result: issue 23's D1 case.

One request's conversation (a user turn and one ~4 MiB tool result), rebuilt as the gateway
rebuilds it per request, then 8 sink-checked calls decided against it: two each of a ``text``, an
``iban``, a ``url`` and an ``email`` sink, whose values recur hundreds of thousands of times in
the result without ever standing there as that value (so a scan has to look at every
occurrence). Shapes: ``repeat`` (default), one letter repeated; ``dense``, near misses of
several kinds; ``json``, a transaction list. Prints the wall time of the 8 calls (index
build included) and of each call, per round, and the median. Not a test. Run it against
another tree for a before/after:

    PYTHONPATH=src .venv/bin/python benchmarks/sink_lookup.py [--mib 4] [--rounds 3] [--shape json]
    PYTHONPATH=/path/to/old/src .venv/bin/python benchmarks/sink_lookup.py
    PYTHONPATH=src .venv/bin/python benchmarks/sink_lookup.py --decide   # the 32 KB cells
    PYTHONPATH=src .venv/bin/python benchmarks/sink_lookup.py --language  # issue 26's words
    (an older tree reads its own manifest: --manifest OLD/examples/agentdojo/banking-policy.json)
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path

from fak.abi import Context, ToolCall
from fak.kernel import Kernel
from fak.policy import Policy

# one letter, 4 Mi times: every value below occurs at every offset and never stands alone
REPEAT = "a"
CALLS_REPEAT = [
    ("rename_user", {"name": "a"}),
    ("rename_user", {"name": "aa"}),
    ("send_money", {"recipient": "AAAA"}),
    ("send_money", {"recipient": "AAAAAA"}),
    ("fetch", {"url": "https://a/"}),
    ("fetch", {"url": "https://aa/"}),
    ("send_email", {"to": "a@aa"}),
    ("send_email", {"to": "aa@a"}),
]
# near misses: each value's text recurs in every unit, never standing as that value
DENSE = "bobbobbob AAAAAAAAAAAA evil-example.com.example.comx xbob@example.comx "
# a transaction list, as a banking tool returns it
ROW = '{"id": 1021, "sender": "GB29NWBK60161331926819", "recipient": "bob@example.com.evil", '
ROW += '"amount": 12.5, "subject": "bobby\'s rent via https://pay.example.com/x"}, '
CALLS = [
    ("rename_user", {"name": "bob"}),
    ("rename_user", {"name": "bobb"}),
    ("send_money", {"recipient": "AAAA"}),
    ("send_money", {"recipient": "WBK60161"}),
    ("fetch", {"url": "https://example.com/"}),
    ("fetch", {"url": "https://xample.com/"}),
    ("send_email", {"to": "bob@example.com"}),
    ("send_email", {"to": "ob@example.com"}),
]
POLICY = {
    "allow": ["rename_user", "send_money", "fetch", "send_email"],
    "sinks": [
        {"tool": "rename_user", "arg": "name", "kind": "text"},
        {"tool": "send_money", "arg": "recipient", "kind": "iban"},
        {"tool": "fetch", "arg": "url", "kind": "url"},
        {"tool": "send_email", "arg": "to", "kind": "email"},
    ],
}


BANKING = Path(__file__).resolve().parents[1] / "examples" / "agentdojo" / "banking-policy.json"


def _history(size: int) -> list[str]:
    """benchmarks/decide.py's conversation: ~``size`` bytes of transaction-list results in
    4 KiB chunks (after a user turn that names the payee)."""
    rows = [
        {"id": i, "recipient": f"GB29NWBK6016133192{i:04d}", "amount": 10.5 + i, "subject": "x"}
        for i in range(size // 100)
    ]
    body = json.dumps(rows)
    return [body[i : i + 4096] for i in range(0, len(body), 4096)]


def _context(chunks: list[str]) -> Context:
    ctx = Context().user("please pay DE89 3704 0044 0532 0130 00 the usual 120 EUR")
    for i, chunk in enumerate(chunks):
        ctx.result("get_most_recent_transactions", f"c{i}", chunk)
    return ctx


def decide_cells(rounds: int, manifest: Path) -> None:
    """The sink cells of benchmarks/decide.py (a send_money on the banking manifest against a
    32 KB conversation), plus a payee found only in the results; p50 of batch means."""
    kernel = Kernel(Policy.load(manifest))
    chunks = _history(32 * 1024)
    warm = _context(chunks)
    pay = {"recipient": "DE89370400440532013000", "amount": 120}
    other = {"recipient": "GB29NWBK6016133192", "amount": 1}
    arms = {
        "index warm": lambda: kernel.decide(ToolCall("send_money", pay, context=warm)),
        "index cold (context built per call)": lambda: kernel.decide(
            ToolCall("send_money", pay, context=_context(chunks))
        ),
        "cold, payee only in the results": lambda: kernel.decide(
            ToolCall("send_money", other, context=_context(chunks))
        ),
    }
    samples: dict[str, list[float]] = {name: [] for name in arms}
    gc.disable()
    try:
        for _ in range(rounds):
            for name, arm in arms.items():
                start = time.perf_counter_ns()
                for _ in range(20):
                    arm()
                samples[name].append((time.perf_counter_ns() - start) / 20 / 1000)
    finally:
        gc.enable()
    for name, values in samples.items():
        print(f"send_money, 32 KB conversation, {name}: p50 {statistics.median(values):.1f} µs")


# issue 26's sink words on one call: a pinned domain, a date, a composed subject, a body screened
# for a confidentiality source's values
LANGUAGE = {
    "allow": ["send_email"],
    "pinned_domains": ["corp.example"],
    "sinks": [
        {"tool": "send_email", "arg": "recipients[]", "kind": "email"},
        {"tool": "send_email", "arg": "date", "kind": "date"},
        {"tool": "send_email", "arg": "subject", "kind": "composed", "unknown": "allow"},
        {"tool": "send_email", "arg": "body", "needs": "any", "unknown": "allow"},
    ],
    "secret_sources": [{"tool": "get_user_information", "fields": ["passport_number"]}],
}
BODY = "Hi Emma, the rent for January is paid as agreed; the receipt is attached. " * 8


def language_cells(rounds: int, manifest: Path) -> None:
    """A send_email that uses every issue-26 word against a 32 KB conversation of JSON results
    (each 4 KiB chunk a whole transaction list, so its leaves are indexed) and a profile; with
    the --decide cell's warm send_money interleaved, as the reference to read ratios against."""
    kernel = Kernel(Policy.loads(json.dumps(LANGUAGE), source="<bench>"))
    banking = Kernel(Policy.load(manifest))
    reference = _context(_history(32 * 1024))
    pay = {"recipient": "DE89370400440532013000", "amount": 120}

    def context() -> Context:
        ctx = Context().user("mail emma the rent receipt for January 11th, subject Rent")
        for i in range(8):
            rows = [
                {"id": i * 40 + j, "recipient": f"GB29NWBK6016133192{i:02d}{j:02d}", "x": "y"}
                for j in range(40)
            ]
            ctx.result("get_most_recent_transactions", f"c{i}", json.dumps(rows))
        ctx.result("get_user_information", "u1", json.dumps({"passport_number": "HGK137803"}))
        return ctx

    warm = context()
    args = {
        "recipients": ["emma@corp.example"],
        "date": "2025-01-11",
        "subject": "Rent for January 11th",
        "body": BODY,
    }
    arms = {
        "reference: send_money (--decide), index warm": lambda: banking.decide(
            ToolCall("send_money", pay, context=reference)
        ),
        "index warm": lambda: kernel.decide(ToolCall("send_email", args, context=warm)),
        "index cold (context built per call)": lambda: kernel.decide(
            ToolCall("send_email", args, context=context())
        ),
    }
    assert all(arm().kind.value == "ALLOW" for arm in arms.values())
    samples: dict[str, list[float]] = {name: [] for name in arms}
    gc.disable()
    try:
        for _ in range(rounds):
            for name, arm in arms.items():
                start = time.perf_counter_ns()
                for _ in range(20):
                    arm()
                samples[name].append((time.perf_counter_ns() - start) / 20 / 1000)
    finally:
        gc.enable()
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"issue-26 sink words, 32 KB conversation, {name}: p50 {median:.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shape", choices=("repeat", "dense", "json"), default="repeat")
    parser.add_argument("--decide", action="store_true", help="time the 32 KB decide cells only")
    parser.add_argument("--manifest", type=Path, default=BANKING, help="for --decide")
    parser.add_argument("--language", action="store_true", help="time issue 26's sink words")
    opts = parser.parse_args()
    if opts.language:
        language_cells(max(opts.rounds, 100), opts.manifest)
        return
    if opts.decide:
        decide_cells(max(opts.rounds, 100), opts.manifest)
        return
    kernel = Kernel(Policy.loads(json.dumps(POLICY), source="<bench>"))
    unit = {"repeat": REPEAT, "dense": DENSE, "json": ROW}[opts.shape]
    result = unit * int(opts.mib * 1024 * 1024 / len(unit))
    calls = CALLS_REPEAT if opts.shape == "repeat" else CALLS
    totals: list[float] = []
    for _ in range(opts.rounds):
        ctx = Context().user("please tidy up my account")  # a fresh context, as per request
        ctx.result("read_file", "c1", result)
        per_call: list[float] = []
        start = time.perf_counter()
        for tool, args in calls:
            t0 = time.perf_counter()
            verdict = kernel.decide(ToolCall(tool, args, context=ctx))
            per_call.append(time.perf_counter() - t0)
            assert verdict.kind.value == "DENY", (tool, verdict)
        totals.append(time.perf_counter() - start)
        each = " ".join(f"{t * 1000:.1f}" for t in per_call)
        size = len(result) / 2**20
        print(f"8 calls, {size:.1f} MiB {opts.shape} result: {totals[-1]:.3f} s  (ms: {each})")
    print(f"median of {opts.rounds}: {statistics.median(totals):.3f} s")


if __name__ == "__main__":
    main()
