"""Witness approvals: a held call admitted once, after a human says yes (tier T2).

A rung that answers REQUIRE_WITNESS (a money-moving or irreversible call, a sink whose value
came from nowhere) does not refuse the call for ever: the kernel opens a *hold* bound to the
tool, the sha256 of the canonical arguments and an expiry, and hands back its id. An operator
approves the id out of band (``fak witness approve``, ``POST /v1/fak/witness/{id}``, MCP
``fak_witness``); the next proposal of the same tool with the same argument digest before the
expiry is admitted once and the approval is spent. A revoked approval never admits again.

States: pending -> approved -> used; any of them -> revoked; pending/approved -> expired (by
the clock). Revoking a pending or approved hold is a "no": until the hold would have expired,
the same call (tool and digest) is refused, not held again. Ids are unguessable (``secrets``)
and single-purpose. Thread-safe; bounded (the oldest settled entries go first, and a full book
of live holds refuses a new one: fail closed).

The ``WitnessBook`` keeps its holds in a ``WitnessStore``: this process's memory
(``MemoryWitnessStore``, here) or Redis shared by every worker
(``fak.kernel.shared.RedisWitnessStore``). A store that cannot answer makes the book fail closed.
"""

from __future__ import annotations

import enum
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final, Protocol

__all__ = [
    "DEFAULT_TTL_S",
    "Hold",
    "HoldState",
    "MemoryWitnessStore",
    "WitnessBook",
    "WitnessError",
    "WitnessStore",
]

DEFAULT_TTL_S: Final = 900.0
DEFAULT_CAPACITY: Final = 4096
OWNER_SHARE: Final = 4
"""One owner (the calling client) may hold at most ``capacity // OWNER_SHARE`` live holds."""


class HoldState(enum.StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    USED = "used"
    REVOKED = "revoked"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class Hold:
    """One witness hold: what it binds (tool, argument digest, expiry) and where it stands."""

    id: str
    tool: str
    digest: str
    claim: str
    created: float
    expires: float
    state: HoldState = HoldState.PENDING
    approver: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "tool": self.tool,
            "args_digest": self.digest,
            "claim": self.claim,
            "state": str(self.state),
            "expires_unix": round(self.expires, 3),
            "approver": self.approver,
        }


class WitnessError(LookupError):
    """An approval or revocation that cannot be done; ``code`` is the stable error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_LIVE: Final = frozenset({HoldState.PENDING, HoldState.APPROVED})


def _new_id() -> str:
    return "w-" + secrets.token_hex(12)


class WitnessStore(Protocol):
    """Above: the ``WitnessBook``. Below: this process's memory, or Redis shared by workers.

    A shared store that cannot be reached opens no hold and spends no approval (None), and
    raises ``WitnessError("witness_store_unavailable")`` from a read, approval or revocation.
    """

    @property
    def ttl_s(self) -> float: ...

    def get(self, hold_id: str) -> Hold | None: ...

    def holds(self) -> list[Hold]: ...

    def hold(self, tool: str, digest: str, claim: str, owner: str = "") -> Hold | None:
        """The open hold for this call, else a new one; None when the book, or ``owner``'s
        share of it (the calling client), is full of live holds. A hold revoked while live
        (an operator's "no") is returned as it is, revoked, until its expiry: the kernel
        refuses the call instead of asking again."""
        ...

    def consume(self, tool: str, digest: str) -> Hold | None: ...

    def approve(self, hold_id: str, approver: str = "") -> Hold: ...

    def revoke(self, hold_id: str) -> Hold: ...

    def note_cleared(self, witness: str, qid: str) -> None:
        """A held result was cleared under ``witness`` (a shared store records it so that a
        revocation on any worker takes it back; this process's kernel remembers its own)."""
        ...

    def take_cleared(self, witness: str) -> set[str]:
        """The clearances recorded under ``witness``, forgotten as they are taken."""
        ...


class WitnessBook:
    """The kernel's holds, kept in a ``WitnessStore`` (memory unless one is given).

    ``clock`` (wall time in seconds, injected for tests), ``ttl_s``, ``capacity`` and ``ids``
    configure the memory store; a given ``store`` keeps its own.
    """

    __slots__ = ("_store",)

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        capacity: int = DEFAULT_CAPACITY,
        ids: Callable[[], str] = _new_id,
        store: WitnessStore | None = None,
    ) -> None:
        self._store: WitnessStore = (
            store
            if store is not None
            else MemoryWitnessStore(clock, ttl_s=ttl_s, capacity=capacity, ids=ids)
        )

    @property
    def ttl_s(self) -> float:
        return self._store.ttl_s

    @property
    def store(self) -> WitnessStore:
        return self._store

    def get(self, hold_id: str) -> Hold | None:
        return self._store.get(hold_id)

    def holds(self) -> list[Hold]:
        """Every hold still on the book, oldest first."""
        return self._store.holds()

    def hold(self, tool: str, digest: str, claim: str, owner: str = "") -> Hold | None:
        """The open hold for this call (reused while it lives), else a new pending one.
        None when the book, or ``owner``'s share of it, is full of live holds (the caller keeps
        refusing: fail closed)."""
        return self._store.hold(tool, digest, claim, owner)

    def consume(self, tool: str, digest: str) -> Hold | None:
        """Spend the approval for exactly this call, if there is a live one."""
        return self._store.consume(tool, digest)

    def approve(self, hold_id: str, approver: str = "") -> Hold:
        return self._store.approve(hold_id, approver)

    def revoke(self, hold_id: str) -> Hold:
        """Retire an id for good (idempotent for an id already revoked)."""
        return self._store.revoke(hold_id)

    def is_revoked(self, hold_id: str) -> bool:
        try:
            hold = self._store.get(hold_id)
        except WitnessError:
            return True  # cannot tell: a presented witness is not trusted
        return hold is not None and hold.state is HoldState.REVOKED

    def note_cleared(self, witness: str, qid: str) -> None:
        """A held result was cleared under ``witness`` (see ``WitnessStore.note_cleared``)."""
        self._store.note_cleared(witness, qid)

    def take_cleared(self, witness: str) -> set[str]:
        """Clearances recorded under ``witness`` by the store (none in memory: the kernel
        remembers its own)."""
        return self._store.take_cleared(witness)


class MemoryWitnessStore:
    """Holds in this process's memory. ``clock`` is wall time in seconds."""

    __slots__ = (
        "_capacity",
        "_clock",
        "_holds",
        "_ids",
        "_lock",
        "_open",
        "_owner_cap",
        "_owner_of",
        "_owners",
        "_settled",
        "_ttl_s",
    )

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        ttl_s: float = DEFAULT_TTL_S,
        capacity: int = DEFAULT_CAPACITY,
        ids: Callable[[], str] = _new_id,
    ) -> None:
        if ttl_s <= 0 or capacity < 1:
            msg = "witness ttl_s and capacity must be positive"
            raise ValueError(msg)
        self._clock = clock
        self._ttl_s = float(ttl_s)
        self._capacity = capacity
        self._ids = ids
        self._lock = threading.Lock()
        self._holds: OrderedDict[str, Hold] = OrderedDict()
        self._open: dict[tuple[str, str], str] = {}  # (tool, digest) -> pending/approved id
        # one client may hold at most a quarter of the book (owner -> its holds, oldest first)
        self._owner_cap = max(1, capacity // OWNER_SHARE)
        self._owners: dict[str, OrderedDict[str, None]] = {}
        self._owner_of: dict[str, str] = {}  # hold id -> owner, so a dropped hold leaves no trace
        self._settled: deque[str] = deque()  # ids no longer live, dropped first when full

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    # -- reading ----------------------------------------------------------------------------
    def _current(self, hold: Hold, now: float) -> Hold:
        if hold.state in (HoldState.PENDING, HoldState.APPROVED) and now >= hold.expires:
            hold = replace(hold, state=HoldState.EXPIRED)
            self._holds[hold.id] = hold
            self._open.pop((hold.tool, hold.digest), None)
        return hold

    def get(self, hold_id: str) -> Hold | None:
        with self._lock:
            hold = self._holds.get(hold_id)
            return None if hold is None else self._current(hold, self._clock())

    def holds(self) -> list[Hold]:
        """Every hold still on the book, oldest first."""
        with self._lock:
            now = self._clock()
            return [self._current(h, now) for h in list(self._holds.values())]

    # -- the kernel's side ------------------------------------------------------------------
    def hold(self, tool: str, digest: str, claim: str, owner: str = "") -> Hold | None:
        """The open hold for this call (reused while it lives), else a new pending one.
        None when the book, or ``owner``'s quarter of it, is full of live holds (the caller
        keeps refusing: fail closed). Every step is O(1) amortized, full or not."""
        with self._lock:
            now = self._clock()
            open_id = self._open.get((tool, digest))
            if open_id is not None:
                current = self._current(self._holds[open_id], now)
                if current.state in _LIVE:
                    return current
                if current.state is HoldState.REVOKED and now < current.expires:
                    return current  # denied: the same call is refused until the hold's expiry
                del self._open[(tool, digest)]
            mine = self._owners.get(owner)
            if mine is not None:
                self._prune_owner(mine, now)
                if len(mine) >= self._owner_cap:
                    return None  # this client's share is full; the rest of the book is not
            if len(self._holds) >= self._capacity and not self._drop_one(now):
                return None
            hold = Hold(self._ids(), tool, digest, claim, now, now + self._ttl_s)
            self._holds[hold.id] = hold
            self._open[(tool, digest)] = hold.id
            self._owners.setdefault(owner, OrderedDict())[hold.id] = None
            self._owner_of[hold.id] = owner
            return hold

    def _prune_owner(self, mine: OrderedDict[str, None], now: float) -> None:
        """Forget an owner's oldest holds while they are no longer live (one TTL for all, so
        the oldest is the first to expire)."""
        while mine:
            oldest = next(iter(mine))
            hold = self._holds.get(oldest)
            if hold is not None and self._current(hold, now).state in _LIVE:
                return
            del mine[oldest]  # no longer live; _forget drops the rest when the book does

    def _drop_one(self, now: float) -> bool:
        """Drop one hold that is no longer live: a settled one first, else the oldest if it
        expired. O(1) amortized: never a scan of the book."""
        while self._settled:
            hold_id = self._settled.popleft()
            hold = self._holds.get(hold_id)
            if hold is not None and hold.state not in _LIVE:
                self._forget(hold_id)
                return True
        oldest = next(iter(self._holds), None)
        if oldest is not None and self._current(self._holds[oldest], now).state not in _LIVE:
            self._forget(oldest)
            return True
        return False

    def _forget(self, hold_id: str) -> None:
        hold = self._holds.pop(hold_id)
        if self._open.get((hold.tool, hold.digest)) == hold_id:
            del self._open[(hold.tool, hold.digest)]
        owner = self._owner_of.pop(hold_id, None)
        mine = self._owners.get(owner) if owner is not None else None
        if mine is not None:
            mine.pop(hold_id, None)
            if not mine:
                del self._owners[owner]  # type: ignore[arg-type]

    def consume(self, tool: str, digest: str) -> Hold | None:
        """Spend the approval for exactly this call, if there is a live one."""
        with self._lock:
            hold_id = self._open.get((tool, digest))
            if hold_id is None:
                return None
            hold = self._current(self._holds[hold_id], self._clock())
            if hold.state is not HoldState.APPROVED:
                return None
            used = replace(hold, state=HoldState.USED)
            self._holds[hold_id] = used
            del self._open[(tool, digest)]
            self._settled.append(hold_id)
            return used

    # -- the operator's side ----------------------------------------------------------------
    def approve(self, hold_id: str, approver: str = "") -> Hold:
        with self._lock:
            hold = self._lookup(hold_id)
            match hold.state:
                case HoldState.PENDING:
                    approved = replace(hold, state=HoldState.APPROVED, approver=approver[:64])
                    self._holds[hold_id] = approved
                    return approved
                case HoldState.APPROVED:
                    return hold
                case HoldState.USED:
                    raise WitnessError(
                        "witness_used", f"witness {hold_id} was already spent on its call"
                    )
                case HoldState.REVOKED:
                    raise WitnessError("witness_revoked", f"witness {hold_id} was revoked")
                case HoldState.EXPIRED:
                    raise WitnessError(
                        "witness_expired",
                        f"witness {hold_id} expired; propose the call again for a new id",
                    )
        raise AssertionError(hold.state)  # pragma: no cover - the match is exhaustive

    def revoke(self, hold_id: str) -> Hold:
        """Retire an id for good (idempotent for an id already revoked)."""
        with self._lock:
            hold = self._lookup(hold_id)
            if hold.state is HoldState.REVOKED:
                return hold
            revoked = replace(hold, state=HoldState.REVOKED)
            self._holds[hold_id] = revoked
            # a live hold revoked is a "no": its (tool, digest) stays bound to it, so the same
            # call is refused until the hold would have expired (``hold`` returns it revoked)
            self._settled.append(hold_id)
            return revoked

    def note_cleared(self, witness: str, qid: str) -> None:
        """Nothing to record: this process's kernel remembers its own clearances."""

    def take_cleared(self, witness: str) -> set[str]:
        return set()

    def _lookup(self, hold_id: str) -> Hold:
        hold = self._holds.get(hold_id)
        if hold is None:
            raise WitnessError("witness_unknown", f"no witness hold with id {hold_id!r}")
        return self._current(hold, self._clock())
