"""Verdict kinds, fold ranks and the Verdict value (tier T0, stdlib only).

A verdict is what a rung, an admitter or the kernel answers. Only DENY and QUARANTINE carry a
reason; only TRANSFORM carries new arguments; every verdict names who decided (``by``) and carries
bounded string metadata. Constructors enforce those rules, so an invalid verdict cannot exist.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fak.abi.reasons import Disposition, Reason, disposition

__all__ = [
    "CLAIM_MAX",
    "META_MAX_ENTRIES",
    "META_VALUE_MAX",
    "Verdict",
    "VerdictKind",
    "fold_rank",
]


class VerdictKind(enum.StrEnum):
    """The closed verdict lattice; values are the wire strings."""

    ALLOW = "ALLOW"
    DEFER = "DEFER"
    TRANSFORM = "TRANSFORM"
    QUARANTINE = "QUARANTINE"
    REQUIRE_WITNESS = "REQUIRE_WITNESS"
    DENY = "DENY"


_FOLD_RANK: dict[str, int] = {
    VerdictKind.ALLOW: 0,
    VerdictKind.DEFER: 1,
    VerdictKind.TRANSFORM: 2,
    VerdictKind.QUARANTINE: 3,
    VerdictKind.REQUIRE_WITNESS: 4,
    VerdictKind.DENY: 100,
}

DENY_RANK = 100
META_MAX_ENTRIES = 16
META_VALUE_MAX = 256
CLAIM_MAX = 256

_EMPTY: Mapping[str, str] = MappingProxyType({})


def fold_rank(kind: object) -> int:
    """Restrictiveness rank of a kind; anything unknown ranks as DENY (fail closed)."""
    if isinstance(kind, str):
        return _FOLD_RANK.get(kind, DENY_RANK)
    return DENY_RANK


def _bound_meta(meta: Mapping[str, str] | None) -> Mapping[str, str]:
    if not meta:
        return _EMPTY
    out: dict[str, str] = {}
    for key in sorted(meta)[:META_MAX_ENTRIES]:
        out[str(key)[:64]] = str(meta[key])[:META_VALUE_MAX]
    return MappingProxyType(out)


@dataclass(frozen=True, slots=True)
class Verdict:
    """One decision. Build it with the class-method constructors, not directly."""

    kind: VerdictKind
    by: str
    reason: Reason = Reason.NONE
    new_args: Mapping[str, Any] | None = None
    claim: str = ""
    meta: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        if self.kind in (VerdictKind.DENY, VerdictKind.QUARANTINE):
            if self.reason == Reason.NONE:
                msg = f"a {self.kind} verdict needs a reason"
                raise ValueError(msg)
        elif self.reason != Reason.NONE and self.kind != VerdictKind.TRANSFORM:
            msg = f"a {self.kind} verdict carries no reason"
            raise ValueError(msg)
        if (self.new_args is not None) != (self.kind == VerdictKind.TRANSFORM):
            msg = "only a TRANSFORM carries new arguments, and a TRANSFORM must carry them"
            raise ValueError(msg)
        if not self.by:
            msg = "every verdict names who decided (by)"
            raise ValueError(msg)

    # -- constructors ---------------------------------------------------------------------
    @classmethod
    def allow(cls, by: str, meta: Mapping[str, str] | None = None) -> Verdict:
        return cls(VerdictKind.ALLOW, by, meta=_bound_meta(meta))

    @classmethod
    def defer(cls, by: str, meta: Mapping[str, str] | None = None) -> Verdict:
        return cls(VerdictKind.DEFER, by, meta=_bound_meta(meta))

    @classmethod
    def transform(
        cls,
        new_args: Mapping[str, Any],
        by: str,
        *,
        reason: Reason = Reason.NONE,
        meta: Mapping[str, str] | None = None,
    ) -> Verdict:
        """A rewrite. ``reason`` may note why (e.g. MISROUTE for a grammar repair)."""
        return cls(
            VerdictKind.TRANSFORM,
            by,
            reason=reason,
            new_args=MappingProxyType(dict(new_args)),
            meta=_bound_meta(meta),
        )

    @classmethod
    def quarantine(
        cls, reason: Reason, by: str, *, claim: str = "", meta: Mapping[str, str] | None = None
    ) -> Verdict:
        return cls(
            VerdictKind.QUARANTINE,
            by,
            reason=reason,
            claim=claim[:CLAIM_MAX],
            meta=_bound_meta(meta),
        )

    @classmethod
    def require_witness(cls, claim: str, by: str, meta: Mapping[str, str] | None = None) -> Verdict:
        return cls(VerdictKind.REQUIRE_WITNESS, by, claim=claim[:CLAIM_MAX], meta=_bound_meta(meta))

    @classmethod
    def deny(
        cls, reason: Reason, by: str, *, claim: str = "", meta: Mapping[str, str] | None = None
    ) -> Verdict:
        """A refusal. ``claim`` is the bounded witness: the offending rule, never arg values."""
        return cls(
            VerdictKind.DENY, by, reason=reason, claim=claim[:CLAIM_MAX], meta=_bound_meta(meta)
        )

    # -- views ------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return fold_rank(self.kind)

    @property
    def admits(self) -> bool:
        """True when the call may be dispatched (ALLOW or TRANSFORM)."""
        return self.kind in (VerdictKind.ALLOW, VerdictKind.TRANSFORM)

    @property
    def disposition(self) -> Disposition | None:
        """What the loop does next: the reason's disposition for DENY, ESCALATE for a witness."""
        if self.kind == VerdictKind.DENY:
            return disposition(self.reason)
        if self.kind == VerdictKind.REQUIRE_WITNESS:
            return Disposition.ESCALATE
        return None

    def to_wire(self) -> dict[str, Any]:
        """The WireVerdict JSON shape: kind, and reason/by/disposition/detail when present."""
        out: dict[str, Any] = {"kind": str(self.kind), "by": self.by}
        if self.reason != Reason.NONE:
            out["reason"] = self.reason.name
        disp = self.disposition
        if disp is not None:
            out["disposition"] = str(disp)
        if self.claim:
            out["detail"] = {"claim": self.claim}
        return out
