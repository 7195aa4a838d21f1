"""An unknown reason code renders as REASON_<n> everywhere and never raises."""

from __future__ import annotations

import json

from fak.abi import Disposition, Reason, Verdict, disposition, reason_name
from fak.abi.replies import reply_for_verdict


def test_finding_small_unknown_reason_code_renders_reason_99() -> None:
    r = Reason(99)
    assert r.name == "REASON_99"
    assert int(r) == 99
    assert reason_name(99) == "REASON_99"
    assert disposition(r) == Disposition.TERMINAL
    wire = Verdict.deny(r, "peer", claim="from a newer peer").to_wire()
    assert wire["reason"] == "REASON_99"
    assert json.loads(json.dumps(wire))["disposition"] == "TERMINAL"
    reply = reply_for_verdict(Verdict.deny(r, "peer"), {})
    assert reply.code == "EN-GATE-D-099"  # the registry's code for a reason it does not know
    assert reply.data["verdict"]["reason"] == "REASON_99"


def test_known_codes_are_still_the_members() -> None:
    assert Reason(6) is Reason.MALFORMED
    assert "REASON_99" not in Reason.__members__
