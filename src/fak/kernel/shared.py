"""Decision state shared by N workers on Redis (tier T2): the quarantine ledger and vDSO epochs.

``RedisLedger`` is the ``QuarantineLedger`` with its held table in Redis: ids are minted by one
counter for the fleet, a held record (digest, length, reason, cleared) is one hash, the FIFO
bound (count and bytes) is kept by the same Lua script that mints, and ``clear`` is one script
too. So a result held via worker 1 can be cleared via worker 2 and paged in via worker 3; the
bytes live pinned in the shared CAS. Screening, stubs and the page-in re-screen are the
ledger's own. When Redis cannot be reached the ledger fails closed: a result that should be
held is still replaced by its stub (with no id: it can never be paged in), a ``clear`` raises,
and a page-in is refused.

``RedisWitnessBook`` is the ``WitnessBook`` on Redis: a call held via one worker is approved via
another and admitted once via any (the approval is spent by one script, so two workers racing on
it admit exactly one call); expiry is judged by Redis's clock, the same for every worker; a
revoked id is revoked everywhere, and the clearances given under it are recorded there too.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import redis
from redis.exceptions import RedisError

from fak.abi import BlobStore, Reason, Ref, RefKind, Verdict, VerdictKind
from fak.kernel.quarantine import (
    DEFAULT_MAX_HELD,
    DEFAULT_MAX_HELD_BYTES,
    OVERSIZE_BYTES,
    Admission,
    HeldSpan,
    PageInRefused,
    QuarantineLedger,
    UnknownQuarantineId,
    _stub,
)
from fak.kernel.vdso import EpochStamp
from fak.kernel.witness import DEFAULT_TTL_S, Hold, HoldState, WitnessBook, WitnessError
from fak.screen import ResultAdmitter
from fak.screen.sources import SourceSettings

__all__ = ["LEDGER_DOWN", "EpochsUnavailable", "RedisEpochs", "RedisLedger", "RedisWitnessBook"]

_log = logging.getLogger(__name__)

LEDGER_DOWN: Final = "ledger unavailable"
"""``PageInRefused.why`` when the shared ledger cannot be reached."""

_BENIGN = frozenset({VerdictKind.ALLOW, VerdictKind.DEFER, VerdictKind.TRANSFORM})

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


class RedisLedger(QuarantineLedger):
    """A ``QuarantineLedger`` whose held table, FIFO bound and clearances live in Redis."""

    def __init__(
        self,
        store: BlobStore,
        client: redis.Redis,
        *,
        max_held: int = DEFAULT_MAX_HELD,
        admitters: Sequence[ResultAdmitter] | None = None,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
        pageout_bytes: int = OVERSIZE_BYTES,
        prefix: str = "fak:ledger:",
    ) -> None:
        super().__init__(
            store,
            max_held=max_held,
            admitters=admitters,
            max_held_bytes=max_held_bytes,
            pageout_bytes=pageout_bytes,
        )
        self._client = client
        self._prefix = prefix
        self._hold_script = client.register_script(_HOLD)
        self._clear_script = client.register_script(_CLEAR)
        self._paged_script = client.register_script(_PAGED)
        self._reseal_script = client.register_script(_RESEAL)
        self._counts["ledger_faults"] = 0

    def _fault(self, what: str, exc: BaseException) -> None:
        _log.warning("shared ledger: %s failed (%s)", what, type(exc).__name__)
        with self._lock:
            self._counts["ledger_faults"] += 1

    # -- views ------------------------------------------------------------------------------
    @property
    def counters(self) -> dict[str, int]:
        out = super().counters
        try:
            with self._client.pipeline(transaction=False) as pipe:
                pipe.llen(self._prefix + "order")
                pipe.get(self._prefix + "bytes")
                held, held_bytes = pipe.execute()
            out["held"], out["held_bytes"] = int(held), int(held_bytes or 0)
        except RedisError:
            out["held"] = out["held_bytes"] = -1  # unknown: the store is down
        return out

    def _record(self, qid: str) -> list[Any]:
        """digest, length, cleared, inline bytes (small results, or the CAS refused them)."""
        key = self._prefix + "h:" + qid
        return list(self._client.hmget(key, "digest", "length", "cleared", "inline"))

    def is_held(self, qid: str) -> bool:
        return self._record(qid)[0] is not None

    def is_cleared(self, qid: str) -> bool:
        return bool(self._record(qid)[2] == b"1")

    @property
    def client(self) -> redis.Redis:
        return self._client

    @property
    def shared(self) -> bool:
        return True

    def ping(self) -> bool:
        try:
            return bool(self._client.ping())
        except RedisError:
            return False

    # -- admission --------------------------------------------------------------------------
    def _page_out(self, data: bytes, digest: str) -> Admission | None:
        admission = super()._page_out(data, digest)
        if admission is not None:
            try:
                self._paged_script(args=[self._prefix, digest, self._max_held])
            except RedisError as exc:  # only another worker's page-in of it is lost
                self._fault("recording a page-out", exc)
        return admission

    def _hold_spans(
        self, data: bytes, digest: str, verdict: Verdict, source: str, settings: SourceSettings
    ) -> Admission | None:
        """The shared ledger keeps no span table yet: a span finding holds the whole result
        (stricter, never looser, than the local ledger)."""
        return None

    def _hold(
        self,
        data: bytes,
        digest: str,
        verdict: Verdict,
        source: str = "",
        *,
        qid: str = "",
        spans: tuple[HeldSpan, ...] = (),
    ) -> Admission:
        # ``source``/``qid``/``spans`` serve the local ledger's span holds, which this one
        # never makes (see ``_hold_spans``); ids are minted by Redis, fleet-wide
        ref, pinned = self._store_pinned(data, digest)
        reason = verdict.reason if verdict.reason != Reason.NONE else Reason.TRUST_VIOLATION
        try:
            out = self._hold_script(
                args=[
                    self._prefix,
                    digest,
                    len(data),
                    reason.name,
                    "1" if pinned else "0",
                    self._max_held,
                    self._max_held_bytes,
                    b"" if pinned else data,  # small results ride in the record itself
                ]
            )
            qid = out[0].decode()
        except RedisError as exc:  # fail closed: held out, and with no id it never comes back
            self._fault("holding a result", exc)
            if pinned:
                self._unpin_digest(ref.digest)
            qid = ""
        with self._lock:
            self._counts["total"] += 1
            self._counts["denied" if verdict.kind == VerdictKind.DENY else "quarantined"] += 1
        if qid:
            evicted = out[1:]
            for i in range(0, len(evicted), 2):
                with self._lock:
                    self._counts["evicted"] += 1
                if evicted[i + 1] == b"1":
                    self._unpin_digest(evicted[i].decode())
        detector = verdict.meta.get("detector", "")
        label = f"quarantine_id={qid}" if qid else "ledger unavailable"
        claim = f"{verdict.by} {reason.name} {detector} {label}".replace("  ", " ")
        meta = {**verdict.meta, "quarantine_id": qid}
        if verdict.kind == VerdictKind.DENY:
            final = Verdict.deny(reason, verdict.by, claim=claim, meta=meta)
        else:
            final = Verdict.quarantine(reason, verdict.by, claim=claim, meta=meta)
        name = Ref(digest=digest, length=len(data), kind=RefKind.BLOB)
        return Admission(final, _stub(qid, reason, len(data)), qid, name, digest)

    def _unpin_digest(self, digest: str) -> None:
        try:
            self._store.unpin(digest)
        except Exception as exc:
            _log.warning("unpin after eviction failed (%s)", type(exc).__name__)

    # -- clear / page-in --------------------------------------------------------------------
    def clear(self, qid: str) -> None:
        """Record a witness clearance for a held id, for every worker; unknown ids raise
        ``UnknownQuarantineId``; an unreachable ledger raises ``ConnectionError``."""
        try:
            done = int(self._clear_script(args=[self._prefix, qid]))
        except RedisError as exc:
            self._fault("clear", exc)
            raise ConnectionError(LEDGER_DOWN) from exc
        if done < 0:
            msg = f"no quarantined result with id {qid!r}"
            raise UnknownQuarantineId(msg)
        if done:
            with self._lock:
                self._counts["cleared"] += 1

    def reseal(self, qid: str) -> bool:
        """Take a clearance back for every worker (its witness was revoked); True if the id
        was cleared. An unreachable ledger raises ``ConnectionError``."""
        try:
            return bool(self._reseal_script(args=[self._prefix, qid]))
        except RedisError as exc:
            self._fault("reseal", exc)
            raise ConnectionError(LEDGER_DOWN) from exc

    def page_in(self, qid_or_ref: str) -> bytes:
        """As ``QuarantineLedger.page_in``, with the held table read from Redis."""
        try:
            digest, length, cleared, inline = self._record(qid_or_ref)
            paged = (
                digest is None
                and len(qid_or_ref) == 64
                and self._client.zscore(self._prefix + "paged", qid_or_ref) is not None
            )
        except RedisError as exc:
            self._fault("page-in lookup", exc)
            self._refuse(LEDGER_DOWN, qid_or_ref)
        source: Ref | str
        if digest is not None:
            if cleared != b"1":
                self._refuse(PageInRefused.NOT_CLEARED, qid_or_ref)
            if inline:
                source = Ref(digest.decode(), len(inline), RefKind.INLINE, inline=bytes(inline))
            else:
                source = Ref(digest.decode(), int(length), RefKind.BLOB)
        elif paged:
            source = qid_or_ref
        else:
            self._refuse(PageInRefused.NOT_HELD, qid_or_ref)
        try:
            if isinstance(source, Ref) and source.inline is not None:
                data = source.inline
            else:
                data = self._store.get(source)
        except Exception as exc:
            _log.warning("page-in read failed (%s)", type(exc).__name__)
            self._refuse(PageInRefused.BYTES_LOST, qid_or_ref)
        verdict = self.screen(data)
        if verdict.kind not in _BENIGN:
            self._refuse(PageInRefused.STILL_FAILS, qid_or_ref)
        with self._lock:
            self._counts["paged_in"] += 1
        return data


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

# ARGV: prefix, tool, digest, claim, ttl, capacity, new id, retention -> {id} | {} (book full)
_W_HOLD: Final = (
    _W_NOW
    + """
local pfx, tool, digest, claim = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl, capacity, id, keep = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local t = now()
local okey = pfx .. 'open:' .. digest .. ':' .. tool
local open = redis.call('GET', okey)
if open then
  local state = settle(pfx, open, t)
  if state == 'pending' or state == 'approved' then return {open} end
end
redis.call('ZREMRANGEBYSCORE', pfx .. 'live', '-inf', t)
if redis.call('ZCARD', pfx .. 'live') >= capacity then return {} end
local key = pfx .. 'h:' .. id
redis.call('HSET', key, 'tool', tool, 'digest', digest, 'claim', claim, 'created', tostring(t),
  'expires', tostring(t + ttl), 'state', 'pending', 'approver', '')
redis.call('EXPIRE', key, math.ceil(ttl + keep))
redis.call('SET', okey, id, 'EX', math.ceil(ttl) + 1)
redis.call('ZADD', pfx .. 'live', t + ttl, id)
redis.call('ZADD', pfx .. 'all', t, id)
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
  redis.call('HSET', key, 'state', 'revoked')
  local h = redis.call('HMGET', key, 'tool', 'digest')
  local okey = pfx .. 'open:' .. h[2] .. ':' .. h[1]
  if redis.call('GET', okey) == id then redis.call('DEL', okey) end
  redis.call('ZREM', pfx .. 'live', id)
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

_RETENTION_S: Final = 86400.0
"""How long a settled hold stays readable after its expiry (revoked ids stay refused by the
trust-epoch bump that revoked them; the record is for listing and audit)."""


class RedisWitnessBook(WitnessBook):
    """The kernel's witness holds on Redis, shared by every worker (a ``WitnessBook``).

    Fails closed when Redis cannot be reached: no hold is opened (the call stays refused), no
    approval is spent, a presented witness counts as revoked, and approving or revoking raises
    ``WitnessError`` with code ``witness_store_unavailable``.
    """

    __slots__ = ("_client", "_prefix", "_scripts")

    def __init__(
        self,
        client: redis.Redis,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        capacity: int = 4096,
        prefix: str = "fak:witness:",
    ) -> None:
        super().__init__(lambda: 0.0, ttl_s=ttl_s, capacity=capacity)
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

    def is_revoked(self, hold_id: str) -> bool:
        try:
            hold = self.get(hold_id)
        except WitnessError:
            return True  # cannot tell: a presented witness is not trusted
        return hold is not None and hold.state is HoldState.REVOKED

    # -- the kernel's side ------------------------------------------------------------------
    def hold(self, tool: str, digest: str, claim: str) -> Hold | None:
        try:
            got = self._run(
                "hold",
                tool,
                digest,
                claim[:512],
                self.ttl_s,
                self._capacity,
                self._ids(),
                max(self.ttl_s, _RETENTION_S),
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
                pipe.expire(key, int(self.ttl_s + _RETENTION_S))
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
