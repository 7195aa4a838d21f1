"""The coherence change feed on one Redis for N workers (issue 23 C1).

Under ``--workers 2`` each worker kept its own feed, so ``/v1/fak/changes`` depended on which
worker answered (cursor 2081 vs 920) and a revocation showed only via the worker that revoked.
The log behind the feed is a ``ChangeLog``: ``MemoryChangeLog`` and ``RedisChangeLog`` answer
the same pages for the same events (a contract run against both), and two ``fak serve``
processes on one Redis answer the same cursor and rows, a revocation via one showing via both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from fak.kernel.shared_feed import RedisChangeLog
from fak.recall import ChangeFeed, ChangeKind, MemoryChangeLog


@pytest.fixture(params=["memory", "redis"])
def make_feed(request: pytest.FixtureRequest) -> Iterator[Callable[..., ChangeFeed]]:
    clients: list[redis.Redis] = []

    def make(retain: int = 4096) -> ChangeFeed:
        if request.param == "memory":
            return ChangeFeed(log=MemoryChangeLog(retain), clock=lambda: 7.0)
        client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
        clients.append(client)
        return ChangeFeed(log=RedisChangeLog(client, retain=retain), clock=lambda: 7.0)

    yield make
    for client in clients:
        client.close()


def test_C1_every_log_numbers_and_pages_events_alike(make_feed: Callable[..., ChangeFeed]) -> None:
    feed = make_feed()
    assert feed.since(0) == feed.since(0, 0)  # empty: no events, cursor 0, not truncated
    assert (feed.cursor, feed.since(0).events, feed.since(0).truncated) == (0, [], False)
    published = [
        feed.publish(ChangeKind.REVOCATION, {"witness": "w-1", "evicted": 2}),
        feed.publish(ChangeKind.TRACE_RESET, {"trace_id": "t-9"}),
        feed.publish(ChangeKind.TOMBSTONE, {"session_id": "s", "step": 3, "digest": "ab"}),
    ]
    assert [e["seq"] for e in published] == [1, 2, 3]
    page = feed.since(1, limit=1)
    assert (page.events, page.cursor, page.truncated) == (
        [{"seq": 2, "kind": "trace_reset", "trace_id": "t-9", "ts": 7.0}],
        2,
        False,
    )
    assert feed.since(0).events == published
    assert feed.since(3).events == [] and feed.since(3).cursor == 3
    after_restart = feed.since(99)  # a cursor the log never gave: start over from the head
    assert (after_restart.events, after_restart.cursor, after_restart.truncated) == ([], 3, True)


def test_C1_a_cursor_older_than_the_kept_window_is_truncated(
    make_feed: Callable[..., ChangeFeed],
) -> None:
    feed = make_feed(retain=3)
    for i in range(5):
        feed.publish(ChangeKind.TRACE_RESET, {"trace_id": f"t{i}"})
    page = feed.since(0)
    assert ([e["seq"] for e in page.events], page.cursor, page.truncated) == ([3, 4, 5], 5, True)
    assert feed.since(2).truncated is False


def test_C1_two_feeds_on_one_redis_are_one_feed(redis_url: str) -> None:
    one, two = (redis.Redis.from_url(redis_url) for _ in range(2))
    try:
        a, b = ChangeFeed(log=RedisChangeLog(one)), ChangeFeed(log=RedisChangeLog(two))
        a.publish(ChangeKind.REVOCATION, {"witness": "w-a"})
        b.publish(ChangeKind.POLICY_RELOAD, {"source": "p.json"})
        assert a.since(0) == b.since(0)
        assert [e["seq"] for e in a.since(0).events] == [1, 2]
    finally:
        one.close()
        two.close()


def test_C1_a_feed_whose_redis_is_down_loses_the_publish_and_refuses_the_read(
    private_redis: Any,
) -> None:
    client = redis.Redis.from_url(private_redis.url, socket_timeout=1, socket_connect_timeout=1)
    try:
        feed = ChangeFeed(log=RedisChangeLog(client))
        feed.publish(ChangeKind.TRACE_RESET, {"trace_id": "t"})
        private_redis.kill()
        lost = feed.publish(ChangeKind.REVOCATION, {"witness": "w"})
        assert (lost["seq"], feed.lost) == (0, 1)  # logged and counted, never raised
        with pytest.raises(ConnectionError, match="change_feed_unavailable"):
            feed.since(0)
    finally:
        client.close()


def test_C1_two_gateways_on_one_redis_answer_the_same_feed(
    redis_url: str, fak_serve: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"allow": ["send_money"], "witness": ["send_money"]}))
    stores = ["--cas-url", redis_url, "--policy", str(path)]
    stores += ["--witness-key-env", "FAK_TEST_WITNESS_KEY"]
    env = {"FAK_TEST_WITNESS_KEY": "wk-fleet"}
    one, two = fak_serve(*stores, env=env), fak_serve(*stores, env=env)
    call = {"tool": "send_money", "arguments": {"recipient": "DE89370400440532013000"}}
    hold = httpx.post(one.url + "/v1/fak/adjudicate", json=call).json()["verdict"]["detail"]
    reset = httpx.post(one.url + "/v1/fak/trace/reset", json={"trace_id": "t-1"})
    assert reset.status_code == 200
    key = {"x-fak-witness-key": "wk-fleet"}
    revoked = httpx.post(
        two.url + "/v1/fak/revoke", headers=key, json={"witness": hold["witness_id"]}
    )
    assert revoked.status_code == 200
    pages = [httpx.get(gw.url + "/v1/fak/changes", params={"since": 0}).json() for gw in (one, two)]
    assert pages[0] == pages[1]
    assert pages[0]["cursor"] == 2 and pages[0]["truncated"] is False
    assert [(e["seq"], e["kind"]) for e in pages[0]["events"]] == [
        (1, "trace_reset"),
        (2, "revocation"),
    ]
    assert pages[0]["events"][1]["witness"] == hold["witness_id"]
    since_one = httpx.get(one.url + "/v1/fak/changes", params={"since": 1}).json()
    assert [e["kind"] for e in since_one["events"]] == ["revocation"]
