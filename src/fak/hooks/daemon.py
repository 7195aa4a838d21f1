"""The resident hook decider (tier T3): ``python -m fak.hooks.daemon --socket PATH``.

Started by ``fak.hooks.client`` on first use, one per user, interpreter and fak version. It
listens on a Unix socket in a directory only its user can enter, answers only peers of its own
uid, and decides each call with ``fak.hooks.decider.answer`` over the caller's cwd and
environment, keeping compiled policies and kernels warm in a ``HookState``. Calls are answered
one at a time (the kernels and the journal see one writer). It exits after
``FAK_HOOKD_IDLE_S`` seconds without a call (default 600), on SIGTERM/SIGINT, and as soon as
the installed fak code changes under it (that call is handed back to the client to decide
in-process, so stale code never answers).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from fak.hooks.client import MAGIC, private_dir
from fak.hooks.decider import HookState, answer

__all__ = ["Decider", "main", "parse_request", "stop_deciders"]

_MAX_REQUEST = 33 * 1024 * 1024
_HANDBACK = MAGIC + b"\x01\x00"
_PEERCRED = struct.Struct("3i")


class RequestError(ValueError):
    """The bytes on the socket are not one whole request."""


def parse_request(data: bytes) -> tuple[str, str, str, dict[str, str], bytes]:
    """(policy, format, cwd, environ, stdin) of one request frame."""
    if not data.startswith(MAGIC):
        raise RequestError("not a fak hook request")
    fields: list[bytes] = []
    at = len(MAGIC)
    for _ in range(5):
        if at + 4 > len(data):
            raise RequestError("truncated request")
        size = int.from_bytes(data[at : at + 4], "big")
        at += 4
        if at + size > len(data):
            raise RequestError("truncated request")
        fields.append(data[at : at + size])
        at += size
    if at != len(data):
        raise RequestError("trailing bytes after the request")
    policy, fmt, cwd, env = (f.decode("utf-8", "surrogateescape") for f in fields[:4])
    environ = dict(item.split("=", 1) for item in env.split("\0") if "=" in item)
    return policy, fmt, cwd, environ, fields[4]


def _code_fingerprint() -> int:
    """The newest modification time among the installed fak sources."""
    package = Path(__file__).resolve().parents[1]
    newest = 0
    for path in package.rglob("*.py"):
        with contextlib.suppress(OSError):
            newest = max(newest, path.stat().st_mtime_ns)
    return newest


class Decider:
    """The accept loop; ``serve`` returns when idle, stopped or stale."""

    def __init__(self, path: str, idle_s: float) -> None:
        self.path = path
        self.idle_s = idle_s
        self.state = HookState()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._last = time.monotonic()
        self._fingerprint = _code_fingerprint()
        self._checked = time.monotonic()

    def stop(self) -> None:
        self._stop.set()

    def _stale(self) -> bool:
        now = time.monotonic()
        if now - self._checked < 2.0:
            return False
        self._checked = now
        return _code_fingerprint() != self._fingerprint

    def handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30.0)
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
            if _PEERCRED.unpack(creds)[1] != os.getuid():
                return  # another user's process: no answer at all
            data = bytearray()
            while len(data) <= _MAX_REQUEST:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
            with self._lock:
                self._last = time.monotonic()
                if self._stale():
                    self.stop()
                    conn.sendall(_HANDBACK)
                    return
                try:
                    policy, fmt, cwd, environ, raw = parse_request(bytes(data))
                except RequestError:
                    conn.sendall(_HANDBACK)
                    return
                done = answer(
                    raw,
                    policy_path=policy or None,
                    fmt=fmt,
                    cwd=cwd,
                    environ=environ,
                    state=self.state,
                )
            out, err = done.stdout.encode(), done.stderr.encode()
            conn.sendall(
                MAGIC
                + bytes((0, done.exit_code & 0xFF))
                + len(out).to_bytes(4, "big")
                + out
                + len(err).to_bytes(4, "big")
                + err
            )

    def _handle_quietly(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):  # the client left or timed out; it decides itself
            self.handle(conn)

    def serve(self, listener: socket.socket) -> None:
        listener.settimeout(0.5)
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if time.monotonic() - self._last > self.idle_s and not self._lock.locked():
                    return
                continue
            threading.Thread(target=self._handle_quietly, args=(conn,), daemon=True).start()


@contextlib.contextmanager
def _sole_owner(path: str) -> Iterator[bool]:
    """Hold ``PATH.lock`` for the decider's life; False when another decider has it."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + 5.0  # a stale decider may be finishing its last call
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    yield False
                    return
                time.sleep(0.05)
        yield True
    finally:
        os.close(fd)


def stop_deciders(run_dir: str | Path, *, wait_s: float = 5.0) -> int:
    """SIGTERM every decider started in ``run_dir`` and wait until each has removed its files;
    one that was just spawned gets a moment to write its pid file. Returns how many were
    signalled."""
    stopped = 0
    for log in Path(run_dir).glob("hookd-*.log"):
        pid_file = log.with_suffix(".pid")
        deadline = time.monotonic() + min(wait_s, 3.0)
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            os.kill(int(pid_file.read_text(encoding="ascii")), signal.SIGTERM)
        except (OSError, ValueError):
            continue
        stopped += 1
        deadline = time.monotonic() + wait_s
        while pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fak.hooks.daemon", description=__doc__)
    parser.add_argument("--socket", required=True, help="The Unix socket to listen on.")
    args = parser.parse_args(argv)
    path: str = args.socket
    from fak.config import Settings, process_environ

    idle_s = Settings.from_environ(process_environ()).hookd_idle_s
    if not private_dir(os.path.dirname(path)):
        print(f"fak hookd: {os.path.dirname(path)} is not private to this user", file=sys.stderr)
        return 2
    with _sole_owner(path) as owner:
        if not owner:
            return 0
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_mask)
        listener.listen(64)
        pid_file = path[: -len(".sock")] + ".pid"
        Path(pid_file).write_text(f"{os.getpid()}\n", encoding="ascii")
        decider = Decider(path, idle_s)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: decider.stop())
        try:
            decider.serve(listener)
        finally:
            listener.close()
            for leftover in (path, pid_file):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover)
    return 0


if __name__ == "__main__":
    sys.exit(main())
