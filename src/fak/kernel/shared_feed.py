"""The coherence change feed's events on Redis, shared by N workers (tier T2).

``RedisChangeLog`` is the Redis implementation of ``fak.recall.ChangeLog`` (the memory one,
``MemoryChangeLog``, sits beside the feed in ``fak.recall.feed``; this module satisfies the
Protocol by shape and imports nothing from recall, a package of the same tier). One counter
numbers every worker's events, and the events live in one sorted set scored by that number, so
``/v1/fak/changes`` answers the same cursor and rows from whichever worker serves it, and a
revocation made via one worker shows via every other. Append (number, store, trim to the retain
bound) and read (head, oldest kept, the page) are one Lua script each, so a reader never sees a
number without its event. Events are names, counters and digests (the feed's own rule), stored
as JSON. An unreachable Redis raises ``ConnectionError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson
import redis
from redis.exceptions import RedisError

__all__ = ["FEED_DOWN", "RedisChangeLog"]

FEED_DOWN: Final = "the shared change feed is unavailable (change_feed_unavailable)"

# KEYS: counter, events; ARGV: event JSON, retain -> the event's number
_APPEND: Final = """
local seq = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], seq, seq .. ' ' .. ARGV[1])
local retain = tonumber(ARGV[2])
if redis.call('ZCARD', KEYS[2]) > retain then
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -retain - 1)
end
return seq
"""

# KEYS: counter, events; ARGV: cursor, limit -> {head, oldest ('' if none), event, ...}
_READ: Final = """
local head = tonumber(redis.call('GET', KEYS[1]) or '0')
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local out = {head, first[2] or ''}
local limit = tonumber(ARGV[2])
if limit > 0 then
  local got = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf', 'LIMIT', 0, limit)
  for _, member in ipairs(got) do table.insert(out, member) end
end
return out
"""


class RedisChangeLog:
    """The change feed's events in Redis (a ``fak.recall.ChangeLog``): keys ``<prefix>seq``
    (the counter) and ``<prefix>events`` (the kept events, at most ``retain``)."""

    __slots__ = ("_append", "_client", "_keys", "_read", "_retain")

    def __init__(
        self, client: redis.Redis, *, prefix: str = "fak:feed:", retain: int = 4096
    ) -> None:
        self._client = client
        self._keys = [prefix + "seq", prefix + "events"]
        self._retain = max(1, int(retain))
        self._append = client.register_script(_APPEND)
        self._read = client.register_script(_READ)

    @property
    def shared(self) -> bool:
        return True

    def append(self, event: Mapping[str, Any]) -> int:
        body = orjson.dumps(dict(event)).decode()
        try:
            return int(self._append(keys=self._keys, args=[body, self._retain]))
        except RedisError as exc:
            raise ConnectionError(FEED_DOWN) from exc

    def read(self, cursor: int, limit: int) -> tuple[int, int, list[dict[str, Any]]]:
        try:
            got: Any = self._read(keys=self._keys, args=[max(0, int(cursor)), max(0, int(limit))])
        except RedisError as exc:
            raise ConnectionError(FEED_DOWN) from exc
        head = int(got[0])
        oldest = int(float(got[1])) if got[1] else head + 1
        events: list[dict[str, Any]] = []
        for member in got[2:]:
            number, _, body = bytes(member).partition(b" ")
            events.append({"seq": int(number), **orjson.loads(body)})
        return head, oldest, events
