"""The closed refusal vocabulary and its dispositions (tier T0, stdlib only).

Reason codes are stable wire numbers: never renumber, never reuse. An unknown code renders as
``REASON_<n>`` and never raises. The disposition tells an agent loop what to do after a refusal.
"""

from __future__ import annotations

import enum

__all__ = ["Disposition", "Reason", "disposition", "reason_by_name", "reason_name"]


class Reason(enum.IntEnum):
    """Why the kernel refused. Closed set; the numbers are part of the ABI."""

    NONE = 0
    DEFAULT_DENY = 1
    POLICY_BLOCK = 2
    SELF_MODIFY = 3
    LEASE_HELD = 4
    TRUST_VIOLATION = 5
    MALFORMED = 6
    MISROUTE = 7
    RATE_LIMITED = 8
    SECRET_EXFIL = 9
    UNWITNESSED = 10
    OVERSIZE = 11
    UNKNOWN_TOOL = 12

    @classmethod
    def _missing_(cls, value: object) -> Reason | None:
        # a code from a newer peer: a pseudo-member named REASON_<n>, so it renders, never raises
        if isinstance(value, int) and not isinstance(value, bool):
            member = int.__new__(cls, value)
            member._name_ = f"REASON_{value}"
            member._value_ = value
            return member
        return None


class Disposition(enum.StrEnum):
    """What the agent loop should do next after a refusal."""

    RETRYABLE = "RETRYABLE"
    WAIT = "WAIT"
    ESCALATE = "ESCALATE"
    TERMINAL = "TERMINAL"


_BY_CODE: dict[int, Reason] = {r.value: r for r in Reason}
_BY_NAME: dict[str, Reason] = {r.name: r for r in Reason}

_DISPOSITIONS: dict[Reason, Disposition] = {
    Reason.MALFORMED: Disposition.RETRYABLE,
    Reason.MISROUTE: Disposition.RETRYABLE,
    Reason.RATE_LIMITED: Disposition.WAIT,
    Reason.LEASE_HELD: Disposition.WAIT,
    Reason.SELF_MODIFY: Disposition.ESCALATE,
    Reason.TRUST_VIOLATION: Disposition.ESCALATE,
}


def reason_name(code: int) -> str:
    """The wire name of a reason code; ``REASON_<n>`` for a code outside the vocabulary."""
    known = _BY_CODE.get(code)
    return known.name if known is not None else f"REASON_{code}"


def reason_by_name(name: str) -> Reason | None:
    """Resolve a wire name (exact, upper-case) to a Reason, or None if it is not in the set."""
    return _BY_NAME.get(name)


def disposition(reason: int) -> Disposition:
    """Disposition of a refusal reason; anything unlisted (unknown codes too) is TERMINAL."""
    known = _BY_CODE.get(reason)
    if known is None:
        return Disposition.TERMINAL
    return _DISPOSITIONS.get(known, Disposition.TERMINAL)
