"""The change feed, the multi-session recorder and vDSO miss attribution (no server needed)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from fak.abi import Reason, Verdict
from fak.kernel import Kernel
from fak.policy import Policy
from fak.recall import (
    ChangeFeed,
    ChangeKind,
    CoherencePlane,
    ResolveStatus,
    SessionDirectory,
    VdsoMiss,
    miss_reason,
    session_dir_name,
)


def test_feed_cursor_limit_and_truncation() -> None:
    world = [3]
    feed = ChangeFeed(retain=3, world=lambda: world[0])
    for i in range(5):
        feed.publish(ChangeKind.POLICY_RELOAD, {"source": f"p{i}"})
    page = feed.since(0)
    assert page.truncated and [e["seq"] for e in page.events] == [3, 4, 5]
    assert page.events[0]["world_ver"] == 3 and page.cursor == 5
    assert feed.since(5).events == [] and feed.since(5).cursor == 5
    assert feed.since(4, limit=1).events[0]["source"] == "p4"
    stale = feed.since(99)  # a cursor from a previous server: start again from the head
    assert (stale.events, stale.cursor, stale.truncated) == ([], 5, True)


def test_session_dir_names_are_safe() -> None:
    assert session_dir_name("trip-42") == "trip-42"
    for bad in ("../etc", ".hidden", "a/b", "", "x" * 200, "a..b"):
        name = session_dir_name(bad)
        assert name.startswith("s-") and len(name) == 34


def test_recorder_dedupes_and_revocation_seals_across_sessions(tmp_path: Path) -> None:
    sessions = SessionDirectory(tmp_path)
    held = Verdict.quarantine(Reason.TRUST_VIOLATION, "kernel", claim="hold")
    assert sessions.record("a", "search_flights", b"HAT136 $129", held) is not None
    assert sessions.record("a", "search_flights", b"HAT136 $129", held) is None  # re-sent
    sessions.record("b", "search_flights", b"HAT212 $154", held)
    for sid in ("a", "b"):
        sessions.session(sid).clear("q1", witness="ops-bob")
        assert sessions.session(sid).resolve(0).ok
    plane = CoherencePlane(Kernel(Policy.default()), sessions=sessions)
    assert plane.revoked("ops-bob", evicted=3) == 2
    fresh = SessionDirectory(tmp_path)  # what is on disk, not what is cached
    for sid in ("a", "b"):
        assert fresh.session(sid).resolve(0).status is ResolveStatus.NOT_CLEARED
    [event] = plane.feed.since(0).events
    assert (event["kind"], event["witness"], event["sealed_pages"]) == ("revocation", "ops-bob", 2)


def test_miss_reasons() -> None:
    kernel = SimpleNamespace(
        tool_entry=lambda name: {
            "get_x": SimpleNamespace(mutates=False, cacheable=True),
            "get_w": SimpleNamespace(mutates=True, cacheable=False),
            "book": SimpleNamespace(mutates=True, cacheable=False),
            "peek": SimpleNamespace(mutates=False, cacheable=False),
        }.get(name)
    )
    assert miss_reason(kernel, "get_x", "vdso") is None
    assert miss_reason(kernel, "get_x", "tool") is VdsoMiss.NOT_CACHED
    assert miss_reason(kernel, "get_w", "tool") is VdsoMiss.RESOURCE_MISNAMED
    assert miss_reason(kernel, "book", "tool") is VdsoMiss.DESTRUCTIVE
    assert miss_reason(kernel, "peek", "tool") is VdsoMiss.MISSING_HINTS
    assert miss_reason(kernel, "nope", "") is VdsoMiss.MISSING_HINTS
    assert miss_reason(kernel, "get_x", "tool", revoked=True) is VdsoMiss.WITNESS_REVOKED
