"""``fak hook``'s launcher (tier T3): hand the call to a resident decider in a few milliseconds.

An agent runs its hook once per tool call, so the hook's start-up is paid on every call. The
full library (policy compiler, screens, journal) takes a few hundred milliseconds to import;
this module imports nothing beyond what the interpreter has already loaded, plus ``_socket``.
It forwards the call (stdin, working directory, options and the ``FAK_*`` / cache variables) to
``fak.hooks.daemon``, a per-user process that keeps the compiled policies and kernels warm and
decides with exactly the code ``fak hook`` runs in-process, and prints its answer.

Whenever the decider is not there (first call, stopped, stale, a socket directory that is not
private to this user, ``FAK_HOOK_DAEMON=0``) or does not answer in time
(``FAK_HOOK_TIMEOUT_S``, default 20), the call is decided in this process by the same
``fak.hooks.decider.answer`` and a decider is started for the next call; with
``FAK_HOOK_DAEMON=require`` only the decider answers (started and waited for, else the call is
refused). Every failure ends in the client's blocking signal (exit 2), never exit 1.

This is the one module besides ``fak.config`` that reads the environment: it cannot afford
``fak.config``'s imports.
"""

from __future__ import annotations

import os
import sys

__all__ = ["MAGIC", "request_frame", "run", "socket_path"]

MAGIC = b"FAKHOOK1"
"""First bytes of every request and reply; bumped whenever the framing changes."""

_FORWARDED = ("HOME", "XDG_CACHE_HOME")
_MAX_FORWARD = 32 * 1024 * 1024  # a larger stdin is decided in-process
_OFF = ("0", "off", "false", "no")


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def request_frame(
    raw: bytes, policy: str, fmt: str, cwd: str, environ: dict[str, str] | os._Environ[str]
) -> bytes:
    """One request: options, the caller's cwd and environment subset, then stdin."""
    env = "\0".join(
        f"{k}={v}" for k, v in environ.items() if k.startswith("FAK_") or k in _FORWARDED
    )
    fields = (policy, fmt, cwd, env)
    return (
        MAGIC
        + b"".join(_field(f.encode("utf-8", "surrogateescape")) for f in fields)
        + (_field(raw))
    )


def run_dir(environ: dict[str, str] | os._Environ[str]) -> str:
    """Where the decider's socket lives: ``FAK_RUN_DIR``, else ``$XDG_RUNTIME_DIR/fak``, else
    the user cache directory."""
    explicit = environ.get("FAK_RUN_DIR")
    if explicit:
        return explicit
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "fak")
    home = environ.get("HOME") or os.path.expanduser("~")
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(cache, "fak", "run")


def socket_path(environ: dict[str, str] | os._Environ[str]) -> str:
    """One decider per user, interpreter and fak version (a different install never answers
    for this one)."""
    from fak import __version__

    here = (sys.executable + "\0" + __file__).encode("utf-8", "surrogateescape")
    digest = 0xCBF29CE484222325
    for byte in here:  # FNV-1a: hashlib's import would cost more than the whole call
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(run_dir(environ), f"hookd-{__version__}-{digest:016x}.sock")


def private_dir(path: str) -> bool:
    """Create the run directory (0700) and accept it only if this user owns it alone."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    is_dir = (st.st_mode & 0o170000) == 0o040000  # not a symlink to somewhere else
    return is_dir and st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0


def _parse(argv: list[str]) -> tuple[str, str] | None:
    """``--policy P`` and ``--format F`` (either spelling); anything else is the full CLI's."""
    policy, fmt = "", "auto"
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name not in ("--policy", "--format"):
            return None
        if not eq:
            if i + 1 >= len(argv):
                return None
            i += 1
            value = argv[i]
        if name == "--policy":
            policy = value
        elif value in ("auto", "claude-code", "codex", "fak"):
            fmt = value
        else:
            return None
        i += 1
    return policy, fmt


def _read_stdin() -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _recv_exact(sock: object, n: int) -> bytes:
    got = bytearray()
    while len(got) < n:
        chunk = sock.recv(min(n - len(got), 1 << 20))  # type: ignore[attr-defined]
        if not chunk:
            raise OSError("the decider closed the connection early")
        got += chunk
    return bytes(got)


def _ask(path: str, frame: bytes, timeout_s: float) -> tuple[int, bytes, bytes] | None:
    """The decider's (exit code, stdout, stderr), or None when it cannot answer."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(path)
        sock.sendall(frame)
        sock.shutdown(_socket.SHUT_WR)
        head = _recv_exact(sock, len(MAGIC) + 2)
        if head[: len(MAGIC)] != MAGIC or head[len(MAGIC)] != 0:
            return None  # a newer framing, or the decider asked us to decide here
        code = head[len(MAGIC) + 1]
        out = _recv_exact(sock, int.from_bytes(_recv_exact(sock, 4), "big"))
        err = _recv_exact(sock, int.from_bytes(_recv_exact(sock, 4), "big"))
        return code, out, err
    except OSError:
        return None
    finally:
        sock.close()


def _start_decider(path: str) -> None:
    """Start a decider for the next call; never delays or fails this one."""
    try:
        import subprocess

        log = open(path[: -len(".sock")] + ".log", "ab")  # noqa: SIM115 - handed to the child
        with log:
            subprocess.Popen(
                [sys.executable, "-m", "fak.hooks.daemon", "--socket", path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
    except Exception:
        return  # the in-process answer stands on its own


def _write(code: int, out: bytes, err: bytes) -> int:
    if out:
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    if err:
        sys.stderr.buffer.write(err)
        sys.stderr.flush()
    return code


def _in_process(raw: bytes, policy: str, fmt: str) -> int:
    try:
        from fak.hooks.decider import answer

        done = answer(raw, policy_path=policy or None, fmt=fmt, cwd=os.getcwd(), environ=os.environ)
        return _write(done.exit_code, done.stdout.encode(), done.stderr.encode())
    except BaseException as exc:  # even an import failure refuses, in the client's terms
        return _refuse(f"{type(exc).__name__}: {exc}")


def run(argv: list[str]) -> int | None:
    """``fak hook ARGV``: the exit code to leave with, or None when the full command line must
    answer (help, typos and new options: it exits 2 on misuse)."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    policy, fmt = parsed
    try:
        raw = _read_stdin()
    except OSError as exc:
        return _refuse(f"cannot read the hook input: {exc}")
    env = os.environ
    mode = env.get("FAK_HOOK_DAEMON", "").strip().lower()
    if mode in _OFF or (len(raw) > _MAX_FORWARD and mode != "require"):
        return _in_process(raw, policy, fmt)
    path = socket_path(env)
    if (unusable := _unusable(path)) is not None:
        if mode == "require":
            return _refuse(unusable)
        return _in_process(raw, policy, fmt)
    if policy:
        policy = os.path.join(os.getcwd(), os.path.expanduser(policy))
    try:
        timeout_s = float(env.get("FAK_HOOK_TIMEOUT_S", "") or 20.0)
    except ValueError:
        timeout_s = 20.0
    frame = request_frame(raw, policy, fmt, os.getcwd(), env)
    reply = _ask(path, frame, timeout_s)
    if reply is not None:
        return _write(*reply)
    if mode == "require":
        return _required(path, frame, timeout_s)
    code = _in_process(raw, policy, fmt)
    _start_decider(path)
    return code


SOCKET_PATH_MAX = 100
"""Bytes of a Unix socket path the decider uses at most (Linux allows 107, macOS 103)."""


def _unusable(path: str) -> str | None:
    """Why the decider cannot live at ``path`` (what to fix), or None when it can."""
    if not private_dir(os.path.dirname(path)):
        return f"{os.path.dirname(path)} is not a private run directory"
    if len(path.encode()) > SOCKET_PATH_MAX:
        return (
            f"the decider's socket path is {len(path.encode())} bytes, over the "
            f"{SOCKET_PATH_MAX} a Unix socket allows: set FAK_RUN_DIR to a shorter directory"
        )
    return None


def _required(path: str, frame: bytes, timeout_s: float) -> int:
    """``FAK_HOOK_DAEMON=require``: only the resident decider answers (one process owns the
    kernels and the journal); start it and wait for it, else refuse."""
    import time

    _start_decider(path)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.05)
        reply = _ask(path, frame, max(0.1, deadline - time.monotonic()))
        if reply is not None:
            return _write(*reply)
    return _refuse(f"the resident decider at {path} did not answer (FAK_HOOK_DAEMON=require)")


def _refuse(why: str) -> int:
    line = b'{"kind": "DENY", "reason": "MALFORMED", "by": "hook"}\n'
    return _write(2, line, f"fak: refused: {why}\n".encode())
