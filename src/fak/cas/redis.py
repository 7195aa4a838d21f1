"""The content-addressed store on Redis (``FAK_CAS_URL=redis://…``), shared by N workers (T1).

Keys, all under one prefix (default ``fak:cas:``): ``b:<digest>`` the bytes, ``pins`` a hash of
pin counts, ``lru`` a sorted set of the *unpinned* digests by last use, ``meta`` a hash of
counters (``bytes`` resident, puts, dedup, resolves, evicted). Every state change is one Lua
script, so two workers never see a half-done put, pin or eviction: a pinned blob is never in
``lru`` and so is never evicted, and past ``max_bytes`` the least recently used unpinned blobs
go first. Reads re-hash the bytes (``CorruptBlobError``, never returned). Redis's own
``maxmemory-policy`` must stay ``noeviction`` (the default): the bound is kept here, pin-aware.

A Redis that cannot be reached raises ``CasUnavailable`` (a ``ConnectionError``), never
``KeyError``: callers fail closed on it (a page-in is refused, a held result stays out).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from fak.abi import INLINE_MAX, Ref, RefKind
from fak.cas.memory import DEFAULT_MAX_BYTES
from fak.cas.refs import CasStats, CorruptBlobError, inline_bytes, make_ref, parse_digest

__all__ = ["DEFAULT_PREFIX", "CasUnavailable", "RedisStore", "connect", "redact_url"]

DEFAULT_PREFIX: Final = "fak:cas:"

_EVICT: Final = """
local function evict(pfx, max)
  if max <= 0 then return end
  local bytes = tonumber(redis.call('HGET', pfx .. 'meta', 'bytes') or '0')
  while bytes > max do
    local victim = redis.call('ZPOPMIN', pfx .. 'lru')
    if #victim == 0 then break end
    local key = pfx .. 'b:' .. victim[1]
    bytes = bytes - redis.call('STRLEN', key)
    redis.call('DEL', key)
    redis.call('HINCRBY', pfx .. 'meta', 'evicted', 1)
  end
  redis.call('HSET', pfx .. 'meta', 'bytes', bytes)
end
"""

# ARGV: prefix, digest, pin (0/1), max_bytes, data
_PUT: Final = (
    _EVICT
    + """
local pfx, digest, pin, max, data = ARGV[1], ARGV[2], ARGV[3] == '1', tonumber(ARGV[4]), ARGV[5]
local key = pfx .. 'b:' .. digest
redis.call('HINCRBY', pfx .. 'meta', 'puts', 1)
local old = redis.call('GET', key)
if old == data then
  redis.call('HINCRBY', pfx .. 'meta', 'dedup', 1)
  if redis.call('ZSCORE', pfx .. 'lru', digest) then
    redis.call('ZADD', pfx .. 'lru', redis.call('INCR', pfx .. 'tick'), digest)
  end
else
  if old then  -- bytes that no longer match their name: rewrite them
    redis.call('HINCRBY', pfx .. 'meta', 'bytes', -#old)
  elseif redis.call('HGET', pfx .. 'pins', digest) == false then
    redis.call('ZADD', pfx .. 'lru', redis.call('INCR', pfx .. 'tick'), digest)
  end
  redis.call('SET', key, data)
  redis.call('HINCRBY', pfx .. 'meta', 'bytes', #data)
end
if pin then
  redis.call('HINCRBY', pfx .. 'pins', digest, 1)
  redis.call('ZREM', pfx .. 'lru', digest)
end
evict(pfx, max)
return 1
"""
)

# ARGV: prefix, digest -> the bytes or false; touches an unpinned blob
_GET: Final = """
local pfx, digest = ARGV[1], ARGV[2]
local data = redis.call('GET', pfx .. 'b:' .. digest)
if not data then return false end
redis.call('HINCRBY', pfx .. 'meta', 'resolves', 1)
if redis.call('ZSCORE', pfx .. 'lru', digest) then
  redis.call('ZADD', pfx .. 'lru', redis.call('INCR', pfx .. 'tick'), digest)
end
return data
"""

# ARGV: prefix, digest -> 1 pinned, 0 not resident
_PIN: Final = """
local pfx, digest = ARGV[1], ARGV[2]
if redis.call('EXISTS', pfx .. 'b:' .. digest) == 0 then return 0 end
redis.call('HINCRBY', pfx .. 'pins', digest, 1)
redis.call('ZREM', pfx .. 'lru', digest)
return 1
"""

# ARGV: prefix, digest, max_bytes -> remaining pins, or -1 when it was not pinned
_UNPIN: Final = (
    _EVICT
    + """
local pfx, digest, max = ARGV[1], ARGV[2], tonumber(ARGV[3])
local count = tonumber(redis.call('HGET', pfx .. 'pins', digest) or '0')
if count <= 0 then return -1 end
if count > 1 then return redis.call('HINCRBY', pfx .. 'pins', digest, -1) end
redis.call('HDEL', pfx .. 'pins', digest)
if redis.call('EXISTS', pfx .. 'b:' .. digest) == 1 then
  redis.call('ZADD', pfx .. 'lru', redis.call('INCR', pfx .. 'tick'), digest)
end
evict(pfx, max)
return 0
"""
)

# ARGV: prefix, digest -> remaining pins, or -1 when it was not pinned; at 0 the blob is deleted
_RELEASE: Final = """
local pfx, digest = ARGV[1], ARGV[2]
local count = tonumber(redis.call('HGET', pfx .. 'pins', digest) or '0')
if count <= 0 then return -1 end
if count > 1 then return redis.call('HINCRBY', pfx .. 'pins', digest, -1) end
redis.call('HDEL', pfx .. 'pins', digest)
local key = pfx .. 'b:' .. digest
local size = redis.call('STRLEN', key)
if size > 0 then
  redis.call('DEL', key)
  redis.call('HINCRBY', pfx .. 'meta', 'bytes', -size)
end
return 0
"""


class CasUnavailable(ConnectionError):
    """The shared store cannot be reached; the operation did not happen."""


def redact_url(url: str) -> str:
    """``url`` without a password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user + ':***@' if user else '***@'}{host}"


def connect(url: str, *, timeout_s: float = 2.0) -> redis.Redis:
    """A thread-safe, pooled client for ``redis://`` / ``rediss://`` / ``unix://`` URLs.

    Bounded: a dead server costs at most ``timeout_s`` per attempt and two quick retries, so a
    request that needs the store is refused promptly rather than hanging.
    """
    if not url.startswith(("redis://", "rediss://", "unix://")):
        msg = f"not a Redis URL (redis://HOST:PORT/DB): {redact_url(url)[:80]}"
        raise ValueError(msg)
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(ExponentialBackoff(cap=0.05, base=0.005), 2),
        health_check_interval=15,
    )


class RedisStore:
    """A ``BlobStore`` on Redis: shared by every worker, bounded, pins ref-counted across them."""

    def __init__(
        self,
        client: redis.Redis | str,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            msg = f"max_bytes must be a non-negative int (0 = unbounded), got {max_bytes!r}"
            raise ValueError(msg)
        self._client = connect(client) if isinstance(client, str) else client
        self._max = max_bytes
        self._prefix = prefix
        self._put = self._client.register_script(_PUT)
        self._get = self._client.register_script(_GET)
        self._pin = self._client.register_script(_PIN)
        self._unpin = self._client.register_script(_UNPIN)
        self._release = self._client.register_script(_RELEASE)

    @property
    def client(self) -> redis.Redis:
        return self._client

    @property
    def max_bytes(self) -> int:
        return self._max

    def _call(self, script: Any, *args: object) -> Any:
        try:
            return script(args=[self._prefix, *args])
        except RedisError as exc:
            msg = f"the Redis CAS is unavailable ({type(exc).__name__})"
            raise CasUnavailable(msg) from exc

    def put(self, data: bytes) -> Ref:
        """Store ``data`` (idempotent by content); small payloads stay inline."""
        return self._store(data, pin=False)

    def put_hashed(self, data: bytes, digest: str) -> Ref:
        """``put`` (the digest is computed again: the Lua script trusts the one it is sent)."""
        return self._store(data, pin=False)

    @property
    def shared(self) -> bool:
        """Shared by every worker: it can be unreachable (see ``ping``)."""
        return True

    def put_pinned(self, data: bytes) -> Ref:
        """``put`` and ``pin`` in one atomic step (no other worker can evict in between)."""
        return self._store(data, pin=True)

    def _store(self, data: bytes, *, pin: bool) -> Ref:
        data = bytes(data)
        if len(data) <= INLINE_MAX:
            return make_ref(data)
        digest = hashlib.sha256(data).hexdigest()
        self._call(self._put, digest, "1" if pin else "0", self._max, data)
        return Ref(digest=digest, length=len(data), kind=RefKind.BLOB)

    def get(self, ref: Ref | str) -> bytes:
        """The verified bytes; ``KeyError`` if absent, ``CorruptBlobError`` if they do not match."""
        if isinstance(ref, Ref) and ref.kind == RefKind.INLINE:
            return inline_bytes(ref)
        digest = parse_digest(ref.digest if isinstance(ref, Ref) else ref)
        data = self._call(self._get, digest)
        if data is None:
            msg = f"no blob {digest}"
            raise KeyError(msg)
        data = bytes(data)
        if hashlib.sha256(data).hexdigest() != digest:
            msg = f"blob {digest} is corrupt in Redis (content does not match its digest)"
            raise CorruptBlobError(msg)
        return data

    def pin(self, digest: str) -> None:
        digest = parse_digest(digest)
        if not self._call(self._pin, digest):
            msg = f"cannot pin {digest}: not resident"
            raise KeyError(msg)

    def unpin(self, digest: str) -> None:
        digest = parse_digest(digest)
        if int(self._call(self._unpin, digest, self._max)) < 0:
            msg = f"{digest} is not pinned"
            raise KeyError(msg)

    def release(self, digest: str) -> None:
        """Drop one pin; at zero the blob is deleted now (pins are fleet-wide here, so no other
        worker still holds it), not left in the LRU."""
        digest = parse_digest(digest)
        if int(self._call(self._release, digest)) < 0:
            msg = f"{digest} is not pinned"
            raise KeyError(msg)

    def pins(self, digest: str) -> int:
        digest = parse_digest(digest)
        try:
            raw = self._client.hget(self._prefix + "pins", digest)
        except RedisError as exc:
            raise CasUnavailable("the Redis CAS is unavailable") from exc
        return int(raw or 0)

    def __contains__(self, digest: object) -> bool:
        if isinstance(digest, Ref):
            digest = digest.digest
        try:
            key = parse_digest(digest) if isinstance(digest, str) else None
        except KeyError:
            return False
        if key is None:
            return False
        try:
            return bool(self._client.exists(self._prefix + "b:" + key))
        except RedisError as exc:
            raise CasUnavailable("the Redis CAS is unavailable") from exc

    def ping(self) -> bool:
        """True when Redis answers (for ``/healthz``)."""
        try:
            return bool(self._client.ping())
        except RedisError:
            return False

    @property
    def stats(self) -> CasStats:
        try:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.hgetall(self._prefix + "meta")
                pipe.hlen(self._prefix + "pins")
                pipe.zcard(self._prefix + "lru")
                meta, pinned, unpinned = pipe.execute()
        except RedisError as exc:
            raise CasUnavailable("the Redis CAS is unavailable") from exc
        counts = {k.decode(): int(v) for k, v in meta.items()}
        return CasStats(
            puts=counts.get("puts", 0),
            dedup_hits=counts.get("dedup", 0),
            resolves=counts.get("resolves", 0),
            evicted=counts.get("evicted", 0),
            resident_blobs=int(pinned) + int(unpinned),
            resident_bytes=counts.get("bytes", 0),
            pinned_blobs=int(pinned),
            max_bytes=self._max,
        )
