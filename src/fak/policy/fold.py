"""The fold: many rung verdicts → one verdict, total and fail-closed (tier T1).

Rungs run in ascending rank (stable for equal ranks). DEFER never wins. A later verdict replaces
the current one only when strictly more restrictive, so on equal rank the earlier rung's verdict
is kept and the result is deterministic; the first DENY stops the walk. After a kept TRANSFORM,
later rungs judge the rewritten arguments (the ones that would be dispatched). An empty chain is
DENY DEFAULT_DENY ``by=empty-policy``; all-defer is ``by=all-defer``; a rung that raises or
answers something that is not a known verdict becomes a DENY naming that rung.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from fak.abi import Reason, ToolCall, Verdict, VerdictKind
from fak.abi.verdicts import DENY_RANK
from fak.policy.args import decode_args

__all__ = ["Chain", "Rung", "RungTrace", "fold"]

logger = logging.getLogger(__name__)

_KINDS: Final = frozenset(VerdictKind)
_EMPTY_POLICY: Final = Verdict.deny(Reason.DEFAULT_DENY, "empty-policy")
_ALL_DEFER: Final = Verdict.deny(Reason.DEFAULT_DENY, "all-defer")


@runtime_checkable
class Rung(Protocol):
    """Above: the fold (kernel decide). Below: one check over a call and its decoded args.

    ``args`` is the decoded argument mapping (after any kept TRANSFORM), or None when the raw
    arguments are not a JSON object. A rung must be pure; raising is treated as a DENY.
    """

    @property
    def name(self) -> str: ...

    @property
    def rank(self) -> int: ...

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict: ...


@dataclass(frozen=True, slots=True)
class RungTrace:
    """One rung's answer during a fold; ``counted`` is False after the walk stopped."""

    rung: str
    rank: int
    verdict: Verdict
    counted: bool = True


def _label(rung: Rung) -> str:
    try:
        name = rung.name
    except Exception:
        name = ""
    return str(name) if name else type(rung).__name__


def _rank_of(rung: Rung) -> int:
    try:
        return int(rung.rank)
    except Exception:
        return DENY_RANK  # a rung whose rank cannot be read runs last


def _fault(rung: Rung, what: str) -> Verdict:
    name = _label(rung)
    logger.warning("rung %s faulted (%s); folding to DENY", name, what)
    return Verdict.deny(
        Reason.DEFAULT_DENY, name, claim=f"rung {name} faulted", meta={"fault": what}
    )


def _ask(rung: Rung, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
    try:
        verdict = rung.decide(call, args)
    except Exception as exc:  # fail closed: a broken rung refuses
        return _fault(rung, f"raised {type(exc).__name__}")
    if not isinstance(verdict, Verdict) or verdict.kind not in _KINDS:
        return _fault(rung, "unknown verdict kind")
    return verdict


def fold(rungs: Sequence[Rung], call: ToolCall, trace: list[RungTrace] | None = None) -> Verdict:
    """Fold ``rungs`` (already in rank order) over ``call``. With ``trace``, every rung runs."""
    if not rungs:
        return _EMPTY_POLICY
    args = decode_args(call.args)
    best: Verdict | None = None
    stopped = False
    for rung in rungs:
        verdict = _ask(rung, call, args)
        if trace is not None:
            trace.append(RungTrace(_label(rung), _rank_of(rung), verdict, not stopped))
        if stopped or verdict.kind == VerdictKind.DEFER:
            continue
        if best is None or verdict.rank > best.rank:
            best = verdict
            if verdict.kind == VerdictKind.TRANSFORM and verdict.new_args is not None:
                args = verdict.new_args
        if verdict.rank >= DENY_RANK:
            if trace is None:
                break
            stopped = True
    return best if best is not None else _ALL_DEFER


class Chain:
    """An ordered, immutable set of rungs and the fold over them."""

    __slots__ = ("_rungs",)

    def __init__(self, rungs: Iterable[Rung]) -> None:
        self._rungs: tuple[Rung, ...] = tuple(sorted(rungs, key=_rank_of))

    @property
    def rungs(self) -> tuple[Rung, ...]:
        return self._rungs

    def __len__(self) -> int:
        return len(self._rungs)

    def decide(self, call: ToolCall) -> Verdict:
        return fold(self._rungs, call)

    def explain(self, call: ToolCall) -> tuple[Verdict, list[RungTrace]]:
        """The folded verdict and every rung's own answer."""
        trace: list[RungTrace] = []
        return fold(self._rungs, call, trace), trace
