"""Many recall sessions under one directory: the recorder a gateway or a kernel runs (tier T2).

``SessionDirectory(root)`` keeps one core image per session id (``root/<id>/``), opened on first
use (loaded if it exists, else created) and persisted after every recorded result, so a crash
loses at most the result being written. A result seen again in the same session (a chat client
re-sends its history every turn) is not recorded twice. Ids that are not safe directory names are
mapped to ``s-<sha256 prefix>``. Open sessions are kept in a small LRU; the images are the truth.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final

from fak.abi import JournalSink, Verdict
from fak.recall.errors import RecallError, RecallErrorCode
from fak.recall.image import ContextChange, Page
from fak.recall.session import Session
from fak.recall.store import MANIFEST_NAME, DirectoryImage
from fak.screen import ResultAdmitter

__all__ = ["SessionDirectory", "session_dir_name"]

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_OPEN_MAX: Final = 256


def session_dir_name(session_id: str) -> str:
    """``session_id`` itself when it is a safe directory name, else ``s-`` + 32 hex of sha256."""
    if _SAFE.match(session_id) and ".." not in session_id:
        return session_id
    return "s-" + hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]


class SessionDirectory:
    """Records results per session into ``root``; resolves, tombstones, revokes across them."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        admitters: Sequence[ResultAdmitter] | Callable[[], Sequence[ResultAdmitter]] | None = None,
        journal: JournalSink | None = None,
    ) -> None:
        self._root = Path(root)
        self._root.mkdir(parents=True, exist_ok=True)
        self._admitters = admitters
        self._journal = journal
        self._lock = threading.Lock()
        self._open: OrderedDict[str, Session] = OrderedDict()
        self._seen: dict[str, set[tuple[str, str]]] = {}

    @property
    def root(self) -> Path:
        return self._root

    def _chain(self) -> Sequence[ResultAdmitter] | None:
        chain = self._admitters
        return chain() if callable(chain) else chain

    def _session(self, session_id: str, *, create: bool) -> Session:
        name = session_dir_name(session_id)
        with self._lock:  # one Session object per image, or two writers would race
            found = self._open.get(name)
            if found is not None:
                self._open.move_to_end(name)
                return found
            image = DirectoryImage(self._root / name)
            kwargs = {"admitters": self._chain(), "journal": self._journal}
            if (self._root / name / MANIFEST_NAME).is_file():
                session = Session.load(image, **kwargs)
            elif create:
                session = Session.create(image, session_id[:256] or name, **kwargs)
            else:
                msg = f"no recorded session {session_id[:80]!r}"
                raise RecallError(RecallErrorCode.IMAGE_MISSING, msg)
            self._open[name] = session
            self._seen[name] = {(p.role, p.digest) for p in session.pages}
            while len(self._open) > _OPEN_MAX:
                old, _ = self._open.popitem(last=False)
                self._seen.pop(old, None)
            return session

    def session(self, session_id: str) -> Session:
        """An existing session (``RecallError`` IMAGE_MISSING if none was recorded)."""
        return self._session(session_id, create=False)

    def record(
        self, session_id: str, role: str, payload: bytes, verdict: Verdict | None = None
    ) -> Page | None:
        """Record one result and persist; None when this session already holds it."""
        session = self._session(session_id, create=True)
        name = session_dir_name(session_id)
        key = (role or "tool_result", hashlib.sha256(payload).hexdigest())
        with self._lock:
            seen = self._seen.setdefault(name, set())
            if key in seen:
                return None
            seen.add(key)
        page = session.record(key[0], payload, verdict=verdict)
        session.persist()
        return page

    def tombstone(
        self,
        session_id: str,
        step: int,
        reason: str,
        *,
        digest: str = "",
        requested_by: str = "agent",
        witness: str = "",
        action: str = "tombstone_page",
    ) -> tuple[ContextChange, bool]:
        return self.session(session_id).tombstone(
            step, reason, digest=digest, requested_by=requested_by, witness=witness, action=action
        )

    def session_ids(self) -> Iterator[str]:
        for entry in sorted(self._root.iterdir()):
            if (entry / MANIFEST_NAME).is_file():
                yield entry.name

    def revoke_witness(self, witness: str) -> int:
        """Apply a revocation to every recorded session; returns pages sealed in total."""
        total = 0
        for name in list(self.session_ids()):
            try:
                total += self._session(name, create=False).revoke_witness(witness)
            except RecallError:  # a damaged image is refused, never half-updated
                continue
        return total

    def forget(self, session_id: str) -> bool:
        """Drop the open handle of a session (its image stays); True if one was open."""
        name = session_dir_name(session_id)
        with self._lock:
            self._seen.pop(name, None)
            return self._open.pop(name, None) is not None
