"""The fold: most restrictive wins, first wins on ties, fail closed; Hypothesis laws."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fak.abi import Reason, ToolCall, Verdict, VerdictKind
from fak.policy import Chain, RungTrace, fold

CALL = ToolCall("get_thing", {"id": 1})


@dataclass
class Const:
    """A rung that always answers the same verdict (and counts its calls)."""

    verdict: Any
    rank: int = 50
    name: str = "const"
    calls: int = 0

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        self.calls += 1
        return self.verdict  # type: ignore[no-any-return]


class Raises:
    name = "boom"
    rank = 20

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        raise RuntimeError("rung bug")


@dataclass
class SeesArgs:
    """Records the args it was shown."""

    rank: int = 90
    name: str = "spy"
    seen: Any = None

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        self.seen = dict(args or {})
        return Verdict.defer(self.name)


def test_empty_chain_denies_by_empty_policy() -> None:
    v = Chain([]).decide(CALL)
    assert (v.kind, v.reason, v.by) == (VerdictKind.DENY, Reason.DEFAULT_DENY, "empty-policy")


def test_all_defer_denies_by_all_defer() -> None:
    v = Chain([Const(Verdict.defer("a")), Const(Verdict.defer("b"), rank=60)]).decide(CALL)
    assert (v.kind, v.reason, v.by) == (VerdictKind.DENY, Reason.DEFAULT_DENY, "all-defer")


def test_defer_never_wins_over_allow() -> None:
    v = Chain([Const(Verdict.allow("a"), rank=1), Const(Verdict.defer("d"), rank=2)]).decide(CALL)
    assert (v.kind, v.by) == (VerdictKind.ALLOW, "a")


def test_raising_rung_is_a_deny_naming_it() -> None:
    v = Chain([Const(Verdict.allow("a")), Raises()]).decide(CALL)
    assert (v.kind, v.reason, v.by) == (VerdictKind.DENY, Reason.DEFAULT_DENY, "boom")
    assert v.meta["fault"] == "raised RuntimeError"


def test_unknown_kind_or_non_verdict_is_a_deny() -> None:
    odd = Verdict.allow("weird")
    object.__setattr__(odd, "kind", "KIND_2048")
    for answer in (odd, None, "ALLOW", {"kind": "ALLOW"}):
        v = Chain([Const(Verdict.allow("a"), rank=1), Const(answer, name="odd")]).decide(CALL)
        assert (v.kind, v.by) == (VerdictKind.DENY, "odd"), answer
        assert v.meta["fault"] == "unknown verdict kind"


def test_first_deny_wins_and_stops_the_walk() -> None:
    later = Const(Verdict.deny(Reason.DEFAULT_DENY, "monitor"), rank=100)
    first = Const(Verdict.deny(Reason.MISROUTE, "grammar"), rank=5)
    v = Chain([later, first]).decide(CALL)
    assert (v.reason, v.by) == (Reason.MISROUTE, "grammar")
    assert later.calls == 0


def test_equal_rank_keeps_the_earlier_verdict() -> None:
    a = Verdict.transform({"x": 1}, "grammar")
    b = Verdict.transform({"x": 2}, "monitor")
    v = Chain([Const(a, rank=5, name="g"), Const(b, rank=100, name="m")]).decide(CALL)
    assert v is a


def test_later_rungs_judge_the_kept_transform() -> None:
    spy = SeesArgs()
    Chain([Const(Verdict.transform({"fixed": True}, "g"), rank=5), spy]).decide(CALL)
    assert spy.seen == {"fixed": True}


def test_explain_shows_every_rung_even_after_the_stop() -> None:
    chain = Chain(
        [
            Const(Verdict.defer("g"), rank=5, name="g"),
            Const(Verdict.deny(Reason.MALFORMED, "p"), rank=10, name="p"),
            Const(Verdict.allow("m"), rank=100, name="m"),
        ]
    )
    verdict, trace = chain.explain(CALL)
    assert verdict == chain.decide(CALL)
    assert [(t.rung, t.rank, t.verdict.kind, t.counted) for t in trace] == [
        ("g", 5, VerdictKind.DEFER, True),
        ("p", 10, VerdictKind.DENY, True),
        ("m", 100, VerdictKind.ALLOW, False),
    ]
    assert all(isinstance(t, RungTrace) for t in trace)


# -- Hypothesis laws -----------------------------------------------------------------------------
_REASONS = st.sampled_from([r for r in Reason if r != Reason.NONE])
_VERDICTS = st.one_of(
    st.just(Verdict.allow("r")),
    st.just(Verdict.defer("r")),
    st.builds(lambda n: Verdict.transform({"n": n}, "r"), st.integers(0, 3)),
    st.builds(lambda r: Verdict.quarantine(r, "r"), _REASONS),
    st.just(Verdict.require_witness("claim", "r")),
    st.builds(lambda r: Verdict.deny(r, "r"), _REASONS),
)
_RUNGS = st.lists(st.tuples(_VERDICTS, st.integers(0, 120)), max_size=8)


def _chain(spec: list[tuple[Verdict, int]]) -> list[Const]:
    return [Const(v, rank=rank, name=f"r{i}") for i, (v, rank) in enumerate(spec)]


@given(_RUNGS, _REASONS, st.integers(0, 120))
def test_adding_a_deny_never_loosens(
    spec: list[tuple[Verdict, int]], reason: Reason, rank: int
) -> None:
    before = Chain(_chain(spec)).decide(CALL)
    after = Chain([*_chain(spec), Const(Verdict.deny(reason, "added"), rank=rank)]).decide(CALL)
    assert after.kind == VerdictKind.DENY
    assert after.rank >= before.rank


@given(_RUNGS, st.randoms(use_true_random=False))
def test_registration_order_does_not_change_the_kind(
    spec: list[tuple[Verdict, int]], rnd: Any
) -> None:
    shuffled = list(spec)
    rnd.shuffle(shuffled)
    assert Chain(_chain(spec)).decide(CALL).kind == Chain(_chain(shuffled)).decide(CALL).kind


@given(_RUNGS)
def test_fold_result_is_the_most_restrictive_non_defer(spec: list[tuple[Verdict, int]]) -> None:
    v = fold(Chain(_chain(spec)).rungs, CALL)
    answers = [verdict for verdict, _ in spec if verdict.kind != VerdictKind.DEFER]
    if not answers:
        assert v.by in ("empty-policy", "all-defer") and v.kind == VerdictKind.DENY
    else:
        assert v.rank == max(a.rank for a in answers)


@given(_RUNGS, st.sampled_from([Raises(), Const(None, name="none")]))
def test_a_faulty_rung_always_yields_deny(spec: list[tuple[Verdict, int]], bad: Any) -> None:
    assert Chain([*_chain(spec), bad]).decide(CALL).kind == VerdictKind.DENY
