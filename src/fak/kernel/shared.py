"""Decision state shared by N workers on Redis (tier T2): held results, witnesses, vDSO epochs.

Each is the Redis implementation of a store Protocol whose memory implementation sits beside
its user (composition: the ledger and the book take the store; nothing here subclasses them).

``RedisHeldTable`` is the ``QuarantineLedger``'s held table (``fak.kernel.held.HeldTable``) in
Redis: ids are minted by one counter for the fleet, a held record (digest, length, reason,
cleared) is one hash, the FIFO bound (count and bytes) is kept by the same Lua script that
mints, and ``clear`` is one script too. So a result held via worker 1 can be cleared via worker
2 and paged in via worker 3; the bytes live pinned in the shared CAS. Screening, stubs and the
page-in re-screen are the ledger's own. When Redis cannot be reached the ledger fails closed: a
result that should be held is still replaced by its stub (with no id: it can never be paged
in), a ``clear`` raises, and a page-in is refused.

``RedisWitnessStore`` is the ``WitnessBook``'s store (``fak.kernel.witness.WitnessStore``) on
Redis: a call held via one worker is approved via another and admitted once via any (the
approval is spent by one script, so two workers racing on it admit exactly one call); expiry is
judged by Redis's clock, the same for every worker; a revoked id is revoked everywhere, and the
clearances given under it are recorded there too. One client (the hold's owner) holds at most a
quarter of the book across the whole fleet, as with the memory store.

``RedisEpochs`` holds the world version and the trust epoch every worker stamps its vDSO keys
with, read before each cached answer; a bump anywhere makes every worker's older answers
unreachable before its next response. A random nonce, set once, names the Redis data set: if
Redis loses its data the nonce changes and every worker flushes. Each bump is also appended to
a capped stream (``fak:epoch:feed``), the changes feed.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import redis
from redis.exceptions import RedisError

from fak.abi import Reason, Ref, RefKind
from fak.kernel.held import (
    DEFAULT_MAX_HELD,
    DEFAULT_MAX_HELD_BYTES,
    LEDGER_DOWN,
    Evicted,
    HeldRecord,
    held_bounds,
)
from fak.kernel.vdso import EpochStamp
from fak.kernel.witness import DEFAULT_TTL_S, OWNER_SHARE, Hold, HoldState, WitnessError

__all__ = [
    "LEDGER_DOWN",
    "EpochsUnavailable",
    "RedisEpochs",
    "RedisHeldTable",
    "RedisWitnessStore",
]

_log = logging.getLogger(__name__)

# ARGV: prefix, digest, length, reason, pinned, max_held, max_bytes, inline bytes ('' if pinned)
# -> {qid, evicted digest, evicted pinned, ...}
_HOLD: Final = """
local pfx = ARGV[1]
local length, max_held, max_bytes = tonumber(ARGV[3]), tonumber(ARGV[6]), tonumber(ARGV[7])
local qid = 'q' .. redis.call('INCR', pfx .. 'seq')
redis.call('HSET', pfx .. 'h:' .. qid, 'digest', ARGV[2], 'length', length, 'reason', ARGV[4],
  'pinned', ARGV[5], 'cleared', '0', 'inline', ARGV[8])
redis.call('RPUSH', pfx .. 'order', qid)
local bytes = redis.call('INCRBY', pfx .. 'bytes', length)
local out = {qid}
while redis.call('LLEN', pfx .. 'order') > max_held or bytes > max_bytes do
  local old = redis.call('LPOP', pfx .. 'order')
  if not old then break end
  local f = redis.call('HMGET', pfx .. 'h:' .. old, 'digest', 'length', 'pinned')
  redis.call('DEL', pfx .. 'h:' .. old)
  bytes = redis.call('INCRBY', pfx .. 'bytes', -tonumber(f[2] or '0'))
  redis.call('HINCRBY', pfx .. 'stats', 'evicted', 1)
  table.insert(out, f[1] or '')
  table.insert(out, f[3] or '0')
end
return out
"""

# ARGV: prefix, qid -> -1 unknown, 0 already cleared, 1 cleared now
_CLEAR: Final = """
local key = ARGV[1] .. 'h:' .. ARGV[2]
if redis.call('EXISTS', key) == 0 then return -1 end
if redis.call('HGET', key, 'cleared') == '1' then return 0 end
redis.call('HSET', key, 'cleared', '1')
return 1
"""

# ARGV: prefix, qid -> 1 when a clearance was taken back
_RESEAL: Final = """
local key = ARGV[1] .. 'h:' .. ARGV[2]
if redis.call('HGET', key, 'cleared') ~= '1' then return 0 end
redis.call('HSET', key, 'cleared', '0')
return 1
"""

# ARGV: prefix, digest, bound
_PAGED: Final = """
local pfx = ARGV[1]
redis.call('ZADD', pfx .. 'paged', redis.call('INCR', pfx .. 'tick'), ARGV[2])
redis.call('ZREMRANGEBYRANK', pfx .. 'paged', 0, -tonumber(ARGV[3]) - 1)
return 1
"""


class RedisHeldTable:
    """The quarantine ledger's held table in Redis (a ``fak.kernel.held.HeldTable``): ids minted
    by one counter for the fleet, one hash per held record, the FIFO bound and clearances kept
    by Lua scripts. Keeps no span records (a span finding holds the whole result: stricter,
    never looser, than the memory table). An unreachable Redis raises ``ConnectionError``."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        max_held: int = DEFAULT_MAX_HELD,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
        prefix: str = "fak:ledger:",
    ) -> None:
        self._max_held, self._max_held_bytes = held_bounds(max_held, max_held_bytes)
        self._client = client
        self._prefix = prefix
        self._hold_script = client.register_script(_HOLD)
        self._clear_script = client.register_script(_CLEAR)
        self._paged_script = client.register_script(_PAGED)
        self._reseal_script = client.register_script(_RESEAL)
        self._lock = threading.Lock()
        self._faults = 0

    def _fault(self, what: str, exc: BaseException) -> ConnectionError:
        _log.warning("shared ledger: %s failed (%s)", what, type(exc).__name__)
        with self._lock:
            self._faults += 1
        return ConnectionError(LEDGER_DOWN)

    @property
    def client(self) -> redis.Redis:
        return self._client

    @property
    def shared(self) -> bool:
        return True

    @property
    def holds_spans(self) -> bool:
        return False

    @property
    def max_held(self) -> int:
        return self._max_held

    @property
    def max_held_bytes(self) -> int:
        return self._max_held_bytes

    def ping(self) -> bool:
        try:
            return bool(self._client.ping())
        except RedisError:
            return False

    def close(self) -> None:
        self._client.close()

    def stats(self) -> dict[str, int]:
        with self._lock:
            out = {"ledger_faults": self._faults}
        try:
            with self._client.pipeline(transaction=False) as pipe:
                pipe.llen(self._prefix + "order")
                pipe.get(self._prefix + "bytes")
                held, held_bytes = pipe.execute()
            out["held"], out["held_bytes"] = int(held), int(held_bytes or 0)
        except RedisError:
            out["held"] = out["held_bytes"] = -1  # unknown: the store is down
        return out

    def reserve(self) -> str:
        """A fresh id from the fleet's counter (the ledger asks only when ``holds_spans``)."""
        try:
            return "q" + str(int(self._client.incr(self._prefix + "seq")))
        except RedisError as exc:
            raise self._fault("minting an id", exc) from exc

    def add(self, record: HeldRecord, qid: str = "") -> tuple[str, list[Evicted]]:
        # ids are minted by Redis, fleet-wide; a reserved ``qid`` is never passed here (no
        # span holds), and ``source`` / ``spans`` serve only the memory table's span holds
        inline = record.ref.inline if not record.pinned else None
        try:
            out = self._hold_script(
                args=[
                    self._prefix,
                    record.ref.digest,
                    record.length,
                    record.reason.name,
                    "1" if record.pinned else "0",
                    self._max_held,
                    self._max_held_bytes,
                    inline or b"",  # small results ride in the record itself
                ]
            )
        except RedisError as exc:
            raise self._fault("holding a result", exc) from exc
        evicted = out[1:]
        return out[0].decode(), [
            Evicted(evicted[i].decode(), evicted[i + 1] == b"1") for i in range(0, len(evicted), 2)
        ]

    def get(self, qid: str) -> HeldRecord | None:
        """The record (digest, length, cleared, inline bytes when not in the CAS)."""
        key = self._prefix + "h:" + qid
        try:
            fields: list[Any] = list(
                self._client.hmget(key, "digest", "length", "cleared", "inline", "reason")
            )
        except RedisError as exc:
            raise self._fault("page-in lookup", exc) from exc
        digest, length, cleared, inline, reason = fields
        if digest is None:
            return None
        ref = (
            Ref(digest.decode(), len(inline), RefKind.INLINE, inline=bytes(inline))
            if inline
            else Ref(digest.decode(), int(length), RefKind.BLOB)
        )
        why = reason.decode() if reason else ""
        return HeldRecord(
            ref,
            pinned=not inline,
            reason=Reason[why] if why in Reason.__members__ else Reason.TRUST_VIOLATION,
            length=int(length or 0),
            cleared=cleared == b"1",
        )

    def clear(self, qid: str) -> int:
        try:
            return int(self._clear_script(args=[self._prefix, qid]))
        except RedisError as exc:
            raise self._fault("clear", exc) from exc

    def reseal(self, qid: str) -> bool:
        try:
            return bool(self._reseal_script(args=[self._prefix, qid]))
        except RedisError as exc:
            raise self._fault("reseal", exc) from exc

    def note_paged(self, digest: str, length: int) -> None:
        try:
            self._paged_script(args=[self._prefix, digest, self._max_held])
        except RedisError as exc:  # only another worker's page-in of it is lost
            self._fault("recording a page-out", exc)

    def is_paged(self, digest: str) -> bool:
        if len(digest) != 64:
            return False
        try:
            return self._client.zscore(self._prefix + "paged", digest) is not None
        except RedisError as exc:
            raise self._fault("page-in lookup", exc) from exc


class EpochsUnavailable(ConnectionError):
    """The shared epochs cannot be read or bumped."""


# ARGV: fresh nonce -> {nonce, world, trust}
_READ: Final = """
local nonce = redis.call('GET', KEYS[1])
if not nonce then
  redis.call('SET', KEYS[1], ARGV[1], 'NX')
  nonce = redis.call('GET', KEYS[1])
end
return {nonce, redis.call('GET', KEYS[2]) or '0', redis.call('GET', KEYS[3]) or '0'}
"""

# KEYS: nonce, counter, feed; ARGV: fresh nonce, kind -> new value
_BUMP: Final = """
redis.call('SET', KEYS[1], ARGV[1], 'NX')
local value = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', 1000, '*', 'kind', ARGV[2], 'value', value)
return value
"""


@dataclass(frozen=True, slots=True)
class _Keys:
    nonce: str
    world: str
    trust: str
    feed: str


class RedisEpochs:
    """The fleet's world version and trust epoch (``fak.kernel.vdso.SharedEpochs``)."""

    def __init__(self, client: redis.Redis, *, prefix: str = "fak:epoch:") -> None:
        self._client = client
        self._keys = _Keys(prefix + "nonce", prefix + "world", prefix + "trust", prefix + "feed")
        self._read = client.register_script(_READ)
        self._bump = client.register_script(_BUMP)

    def read(self) -> EpochStamp:
        k = self._keys
        try:
            nonce, world, trust = self._read(
                keys=[k.nonce, k.world, k.trust], args=[secrets.token_hex(8)]
            )
        except RedisError as exc:
            raise EpochsUnavailable("the shared epochs are unavailable") from exc
        return EpochStamp(int(world), int(trust), nonce.decode())

    def _incr(self, key: str, kind: str) -> int:
        k = self._keys
        try:
            return int(self._bump(keys=[k.nonce, key, k.feed], args=[secrets.token_hex(8), kind]))
        except RedisError as exc:
            raise EpochsUnavailable("the shared epochs are unavailable") from exc

    def bump_world(self) -> int:
        """A write happened somewhere in the fleet: every cached read is stale."""
        return self._incr(self._keys.world, "world")

    def bump_trust(self) -> int:
        """Policy or trust changed (a reload, a revocation): every cached answer is stale."""
        return self._incr(self._keys.trust, "trust")

    def changes(self, since: str = "0-0", count: int = 100) -> list[tuple[str, str, int]]:
        """The changes feed after stream id ``since``: (id, kind, new value), oldest first."""
        try:
            got: Any = self._client.xrange(self._keys.feed, min=f"({since}", count=count)
        except RedisError as exc:
            raise EpochsUnavailable("the shared epochs are unavailable") from exc
        return [
            (ident.decode(), fields[b"kind"].decode(), int(fields[b"value"]))
            for ident, fields in got
        ]

    def follow(
        self, on_change: Callable[[str, int], None], stop: threading.Event, *, block_ms: int = 1000
    ) -> None:
        """Call ``on_change(kind, value)`` for every bump appended to the feed from now on,
        until ``stop`` is set (run it in a thread). Outages are waited out, never raised."""
        last = "0-0"  # an empty feed: everything that arrives is new
        try:
            newest: Any = self._client.xrevrange(self._keys.feed, count=1)
            if newest:
                last = newest[0][0].decode()
        except RedisError:
            pass
        while not stop.is_set():
            try:
                got: Any = self._client.xread({self._keys.feed: last}, block=block_ms, count=100)
            except RedisError:
                stop.wait(0.5)
                continue
            for _, entries in got or ():
                for ident, fields in entries:
                    last = ident.decode()
                    try:
                        on_change(fields[b"kind"].decode(), int(fields[b"value"]))
                    except Exception as exc:  # a follower's fault must not stop the feed
                        _log.warning("epoch feed follower failed (%s)", type(exc).__name__)


# -- witness approvals ---------------------------------------------------------------------------
_W_NOW: Final = """
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
-- a pending/approved hold past its expiry is expired (and no longer open)
local function settle(pfx, id, t)
  local key = pfx .. 'h:' .. id
  local h = redis.call('HMGET', key, 'state', 'expires', 'tool', 'digest')
  if not h[1] then return nil end
  if (h[1] == 'pending' or h[1] == 'approved') and tonumber(h[2]) <= t then
    redis.call('HSET', key, 'state', 'expired')
    local okey = pfx .. 'open:' .. h[4] .. ':' .. h[3]
    if redis.call('GET', okey) == id then redis.call('DEL', okey) end
    redis.call('ZREM', pfx .. 'live', id)
    return 'expired'
  end
  return h[1]
end
"""

# ARGV: prefix, tool, digest, claim, ttl, capacity, new id, retention, owner, owner cap
# -> {id} | {} (the book, or the owner's share of it, is full of live holds)
_W_HOLD: Final = (
    _W_NOW
    + """
local pfx, tool, digest, claim = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl, capacity, id, keep = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local owner, owner_cap = ARGV[9], tonumber(ARGV[10])
local t = now()
local okey = pfx .. 'open:' .. digest .. ':' .. tool
local open = redis.call('GET', okey)
if open then
  local state = settle(pfx, open, t)
  if state == 'pending' or state == 'approved' then return {open} end
  if state == 'revoked' and tonumber(redis.call('HGET', pfx .. 'h:' .. open, 'expires')) > t then
    return {open}
  end
end
local mine = pfx .. 'own:' .. owner
redis.call('ZREMRANGEBYSCORE', mine, '-inf', t)
if redis.call('ZCARD', mine) >= owner_cap then return {} end
redis.call('ZREMRANGEBYSCORE', pfx .. 'live', '-inf', t)
if redis.call('ZCARD', pfx .. 'live') >= capacity then return {} end
local key = pfx .. 'h:' .. id
redis.call('HSET', key, 'tool', tool, 'digest', digest, 'claim', claim, 'created', tostring(t),
  'expires', tostring(t + ttl), 'state', 'pending', 'approver', '', 'owner', owner)
redis.call('EXPIRE', key, math.ceil(ttl + keep))
redis.call('SET', okey, id, 'EX', math.ceil(ttl) + 1)
redis.call('ZADD', pfx .. 'live', t + ttl, id)
redis.call('ZADD', pfx .. 'all', t, id)
redis.call('ZADD', mine, t + ttl, id)
redis.call('EXPIRE', mine, math.ceil(ttl) + 1)
return {id}
"""
)

# ARGV: prefix, tool, digest -> the spent id, or false
_W_CONSUME: Final = (
    _W_NOW
    + """
local pfx = ARGV[1]
local okey = pfx .. 'open:' .. ARGV[3] .. ':' .. ARGV[2]
local id = redis.call('GET', okey)
if not id then return false end
if settle(pfx, id, now()) ~= 'approved' then return false end
redis.call('HSET', pfx .. 'h:' .. id, 'state', 'used')
redis.call('DEL', okey)
redis.call('ZREM', pfx .. 'live', id)
redis.call('ZREM', pfx .. 'own:' .. (redis.call('HGET', pfx .. 'h:' .. id, 'owner') or ''), id)
return id
"""
)

# ARGV: prefix, id, approver -> 'ok' or the state that forbids it ('unknown' if none)
_W_APPROVE: Final = (
    _W_NOW
    + """
local pfx, id = ARGV[1], ARGV[2]
local state = settle(pfx, id, now())
if not state then return 'unknown' end
if state == 'pending' then
  redis.call('HSET', pfx .. 'h:' .. id, 'state', 'approved', 'approver', ARGV[3])
  return 'ok'
end
if state == 'approved' then return 'ok' end
return state
"""
)

# ARGV: prefix, id -> 'ok' or 'unknown'
_W_REVOKE: Final = (
    _W_NOW
    + """
local pfx, id = ARGV[1], ARGV[2]
local state = settle(pfx, id, now())
if not state then return 'unknown' end
local key = pfx .. 'h:' .. id
if state ~= 'revoked' then
  -- the open key stays (it expires with the hold): the same call is refused, not held again
  redis.call('HSET', key, 'state', 'revoked')
  local h = redis.call('HMGET', key, 'tool', 'digest', 'owner')
  redis.call('ZREM', pfx .. 'live', id)
  redis.call('ZREM', pfx .. 'own:' .. (h[3] or ''), id)
end
return 'ok'
"""
)

# ARGV: prefix, id -> the hold's fields (state settled), or false
_W_GET: Final = (
    _W_NOW
    + """
local pfx, id = ARGV[1], ARGV[2]
if not settle(pfx, id, now()) then return false end
return redis.call('HMGET', pfx .. 'h:' .. id, 'tool', 'digest', 'claim', 'created', 'expires',
  'state', 'approver')
"""
)

_OWNER_MAX: Final = 256
"""An owner name is cut to this many characters for its key."""

_RETENTION_S: Final = 86400.0
"""How long a settled hold stays readable after its expiry (revoked ids stay refused by the
trust-epoch bump that revoked them; the record is for listing and audit)."""


class RedisWitnessStore:
    """The kernel's witness holds on Redis, shared by every worker (a ``WitnessStore``).

    Fails closed when Redis cannot be reached: no hold is opened (the call stays refused), no
    approval is spent, and reading, approving or revoking raises ``WitnessError`` with code
    ``witness_store_unavailable`` (so the book counts a presented witness as revoked).
    """

    __slots__ = ("_capacity", "_client", "_ids", "_owner_cap", "_prefix", "_scripts", "_ttl_s")

    def __init__(
        self,
        client: redis.Redis,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        capacity: int = 4096,
        prefix: str = "fak:witness:",
        ids: Callable[[], str] = lambda: "w-" + secrets.token_hex(12),
    ) -> None:
        if ttl_s <= 0 or capacity < 1:
            msg = "witness ttl_s and capacity must be positive"
            raise ValueError(msg)
        self._ttl_s = float(ttl_s)
        self._capacity = capacity
        self._owner_cap = max(1, capacity // OWNER_SHARE)  # one client: a quarter of the book
        self._ids = ids
        self._client = client
        self._prefix = prefix
        self._scripts = {
            name: client.register_script(body)
            for name, body in (
                ("hold", _W_HOLD),
                ("consume", _W_CONSUME),
                ("approve", _W_APPROVE),
                ("revoke", _W_REVOKE),
                ("get", _W_GET),
            )
        }

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    def _run(self, name: str, *args: Any) -> Any:
        return self._scripts[name](args=[self._prefix, *args])

    @staticmethod
    def _down(exc: BaseException) -> WitnessError:
        _log.warning("shared witness book unavailable (%s)", type(exc).__name__)
        return WitnessError("witness_store_unavailable", "the shared witness store is unavailable")

    def _hold_of(self, hold_id: str, fields: Any) -> Hold | None:
        if not fields:
            return None
        tool, digest, claim, created, expires, state, approver = (
            (f or b"").decode() for f in fields
        )
        return Hold(
            hold_id,
            tool,
            digest,
            claim,
            float(created or 0),
            float(expires or 0),
            HoldState(state),
            approver,
        )

    # -- reading ----------------------------------------------------------------------------
    def get(self, hold_id: str) -> Hold | None:
        try:
            return self._hold_of(hold_id, self._run("get", hold_id))
        except RedisError as exc:
            raise self._down(exc) from exc

    def holds(self) -> list[Hold]:
        try:
            listed: Any = self._client.zrange(self._prefix + "all", 0, -1)
            out: list[Hold] = []
            gone: list[str] = []
            for hold_id in (i.decode() for i in listed):
                hold = self.get(hold_id)
                if hold is None:
                    gone.append(hold_id)
                else:
                    out.append(hold)
            if gone:
                self._client.zrem(self._prefix + "all", *gone)
        except RedisError as exc:
            raise self._down(exc) from exc
        return out

    # -- the kernel's side ------------------------------------------------------------------
    def hold(self, tool: str, digest: str, claim: str, owner: str = "") -> Hold | None:
        """As the memory store's: bounded by the book's capacity and, fleet-wide, by the
        owner's quarter of it (``<prefix>own:<owner>``, its live holds scored by expiry; a
        hold spent or revoked leaves it at once, an expired one by score). O(log n) per hold,
        full or not: never a scan of the book."""
        try:
            got = self._run(
                "hold",
                tool,
                digest,
                claim[:512],
                self._ttl_s,
                self._capacity,
                self._ids(),
                max(self._ttl_s, _RETENTION_S),
                owner[:_OWNER_MAX],
                self._owner_cap,
            )
            return self.get(got[0].decode()) if got else None
        except (RedisError, WitnessError) as exc:
            _log.warning("shared witness book: no hold opened (%s)", type(exc).__name__)
            return None  # the kernel refuses the call

    def consume(self, tool: str, digest: str) -> Hold | None:
        try:
            spent = self._run("consume", tool, digest)
            return None if not spent else self.get(spent.decode())
        except (RedisError, WitnessError) as exc:
            _log.warning("shared witness book: no approval spent (%s)", type(exc).__name__)
            return None

    # -- the operator's side ----------------------------------------------------------------
    def _settle(self, name: str, hold_id: str, *args: object) -> Hold:
        try:
            answer = self._run(name, hold_id, *args).decode()
        except RedisError as exc:
            raise self._down(exc) from exc
        messages = {
            "unknown": ("witness_unknown", f"no witness hold with id {hold_id!r}"),
            "used": ("witness_used", f"witness {hold_id} was already spent on its call"),
            "revoked": ("witness_revoked", f"witness {hold_id} was revoked"),
            "expired": (
                "witness_expired",
                f"witness {hold_id} expired; propose the call again for a new id",
            ),
        }
        if answer != "ok":
            raise WitnessError(*messages[answer])
        hold = self.get(hold_id)
        if hold is None:  # expired out of Redis between the two calls
            raise WitnessError(*messages["unknown"])
        return hold

    def approve(self, hold_id: str, approver: str = "") -> Hold:
        return self._settle("approve", hold_id, approver[:64])

    def revoke(self, hold_id: str) -> Hold:
        return self._settle("revoke", hold_id)

    # -- clearances given under a witness (so a revocation anywhere takes them back) --------
    def note_cleared(self, witness: str, qid: str) -> None:
        key = self._prefix + "cleared:" + witness
        try:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.sadd(key, qid)
                pipe.expire(key, int(self._ttl_s + _RETENTION_S))
                pipe.execute()
        except RedisError as exc:
            raise self._down(exc) from exc

    def take_cleared(self, witness: str) -> set[str]:
        key = self._prefix + "cleared:" + witness
        try:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.smembers(key)
                pipe.delete(key)
                members, _ = pipe.execute()
        except RedisError as exc:
            raise self._down(exc) from exc
        return {m.decode() for m in members}
