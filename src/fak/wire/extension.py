"""The ``fak`` response extension and the in-band notes every wire carries (tier T1, pure).

Owns the wire shape of a verdict (``WireVerdict``), of one call adjudication and one result
admission, the extension object attached to a turn with tool activity, the deny summary written
as content when no proposed call survives, the leading ``[fak]`` note for the Anthropic wire and
the refusal note an OpenAI-wire turn carries in its text when only some calls survive.
Never carries argument values or result bytes: names, verdicts, reasons and digests only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fak.abi import Disposition, Reason, Verdict, VerdictKind

__all__ = [
    "ADMIT_ERROR",
    "Adjudication",
    "FakExtension",
    "ResultAdmission",
    "WireVerdict",
    "anthropic_note",
    "deny_summary",
    "refusal_note",
]

ADMIT_ERROR = "ADMIT_ERROR"
"""Wire-level marker for a tool result the kernel could not admit (held out, fail closed)."""


@dataclass(frozen=True, slots=True)
class WireVerdict:
    """A verdict as the wire shows it: kind, reason, by, disposition, detail.claim."""

    kind: str
    by: str = ""
    reason: str = ""
    disposition: str = ""
    claim: str = ""
    witness_id: str = ""  # a held call: the id an operator approves (``fak witness approve``)

    @classmethod
    def of(cls, verdict: Verdict) -> WireVerdict:
        reason = verdict.reason.name if verdict.reason != Reason.NONE else ""
        disp = verdict.disposition
        return cls(
            kind=str(verdict.kind),
            by=verdict.by,
            reason=reason,
            disposition=str(disp) if disp is not None else "",
            claim=verdict.claim,
            witness_id=verdict.meta.get("witness_id", ""),
        )

    @classmethod
    def admit_error(cls) -> WireVerdict:
        return cls(
            kind=str(VerdictKind.QUARANTINE),
            by="gateway",
            reason=ADMIT_ERROR,
            disposition=str(Disposition.TERMINAL),
        )

    @property
    def admits(self) -> bool:
        return self.kind in (VerdictKind.ALLOW, VerdictKind.TRANSFORM)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.reason:
            out["reason"] = self.reason
        if self.by:
            out["by"] = self.by
        if self.disposition:
            out["disposition"] = self.disposition
        if self.claim or self.witness_id:
            detail: dict[str, str] = {"claim": self.claim} if self.claim else {}
            if self.witness_id:
                detail["witness_id"] = self.witness_id
            out["detail"] = detail
        return out


@dataclass(frozen=True, slots=True)
class Adjudication:
    """The decision on one proposed tool call, kept or dropped."""

    tool_call_id: str
    tool: str
    args_digest: str
    verdict: WireVerdict
    repaired_arguments: Mapping[str, Any] | None = None

    @property
    def admitted(self) -> bool:
        return self.verdict.admits

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool_call_id": self.tool_call_id,
            "tool": self.tool,
            "args_digest": self.args_digest,
            "admitted": self.admitted,
            "verdict": self.verdict.to_json(),
        }
        if self.verdict.kind == VerdictKind.TRANSFORM and self.repaired_arguments is not None:
            out["repaired_arguments"] = dict(self.repaired_arguments)
        return out


@dataclass(frozen=True, slots=True)
class ResultAdmission:
    """The decision on one inbound tool result."""

    tool_call_id: str
    tool: str
    verdict: WireVerdict

    @property
    def held(self) -> bool:
        """True when the result's bytes were kept out of the planner's context."""
        return self.verdict.kind not in (VerdictKind.ALLOW, VerdictKind.TRANSFORM)

    def to_json(self) -> dict[str, Any]:
        return {
            "tool_call_id": self.tool_call_id,
            "tool": self.tool,
            "verdict": self.verdict.to_json(),
        }


@dataclass(frozen=True, slots=True)
class FakExtension:
    adjudications: tuple[Adjudication, ...] = ()
    result_admissions: tuple[ResultAdmission, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.adjudications and not self.result_admissions

    def to_json(self) -> dict[str, Any]:
        return {
            "adjudications": [a.to_json() for a in self.adjudications],
            "result_admissions": [r.to_json() for r in self.result_admissions],
        }


def _refusal(a: Adjudication) -> str:
    v = a.verdict
    detail = "/".join(x for x in (v.reason, v.disposition) if x)
    text = f"{a.tool} → {v.kind}" + (f" ({detail})" if detail else "")
    if v.witness_id:
        text += f", held until an operator runs `fak witness approve {v.witness_id}`"
    return text


def deny_summary(adjudications: Sequence[Adjudication]) -> str:
    """Content written in-band when no proposed call survived (for clients that skip ``fak``)."""
    refused = "; ".join(_refusal(a) for a in adjudications if not a.admitted)
    return f"[fak] no proposed tool call was admitted by the kernel: {refused}"


def refusal_note(adjudications: Sequence[Adjudication]) -> str:
    """The ``[fak]`` text an OpenAI-wire turn carries when some proposed calls were refused
    and others survive (the model sees the survivors as calls and learns of the rest here),
    or ``""`` when nothing was refused."""
    refused = [a for a in adjudications if not a.admitted]
    if not refused:
        return ""
    listed = "; ".join(_refusal(a) for a in refused)
    return (
        f"[fak] refused {len(refused)} tool call(s): {listed}. "
        "Propose a different approach rather than repeating a refused call unchanged."
    )


def anthropic_note(ext: FakExtension) -> str:
    """The leading ``[fak]`` text for the Anthropic wire, or ``""`` when nothing was dropped,
    repaired or held."""
    parts: list[str] = []
    refused = [a for a in ext.adjudications if not a.admitted]
    if refused:
        listed = "; ".join(_refusal(a) for a in refused)
        parts.append(
            f"refused {len(refused)} tool call(s): {listed}. "
            "Propose a different approach rather than repeating a refused call unchanged."
        )
    repaired = [a.tool for a in ext.adjudications if a.verdict.kind == VerdictKind.TRANSFORM]
    if repaired:
        parts.append(f"repaired the arguments of: {', '.join(repaired)}.")
    held = [r for r in ext.result_admissions if r.held]
    if held:
        reasons = ", ".join(r.verdict.reason or "RESULT_FLOOR" for r in held)
        parts.append(
            f"{len(held)} tool result(s) held out of context ({reasons}); the bytes are paged "
            "out, not lost, and can be paged back in after a review."
        )
    return "[fak] " + " ".join(parts) if parts else ""
