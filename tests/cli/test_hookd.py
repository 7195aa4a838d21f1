"""The hook's resident decider: parity with the in-process answer, and every way it can fail
ending in a correct answer (decided in-process) or, with ``FAK_HOOK_DAEMON=require``, a blocking
refusal — never a hang, never exit 1."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fak.hooks import daemon as hookd
from fak.hooks.client import MAGIC, request_frame, socket_path
from fak.hooks.daemon import stop_deciders
from fak.hooks.decider import HookState, answer

LAUNCHER = [sys.executable, "-m", "fak.cli.launch", "hook"]
POLICY = {"allow": ["Read"], "deny": {"Write": "POLICY_BLOCK"}}
PRE_READ = {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "a"}}


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A private run directory outside ``tmp_path``, whose depth can take the decider's socket
    path past the 100 bytes a Unix socket allows."""
    path = Path(tempfile.mkdtemp(prefix="fak-run-"))
    yield path
    stop_deciders(path)
    shutil.rmtree(path, ignore_errors=True)


def _env(run_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAK_")}
    return {**env, "FAK_RUN_DIR": str(run_dir), "FAK_HOOKD_IDLE_S": "20", **extra}


def _launch(
    env: dict[str, str], payload: Any, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LAUNCHER, *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=cwd,
    )


def _wait_for(path: Path, present: bool = True) -> None:
    for _ in range(200):
        if path.exists() == present:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} {'never appeared' if present else 'was never removed'}")


def test_first_call_decides_in_process_and_starts_a_decider_that_stops_cleanly(
    run_dir: Path,
) -> None:
    env = _env(run_dir)
    sock = Path(socket_path(env))
    first = _launch(env, PRE_READ)
    assert first.returncode == 2 and "DEFAULT_DENY" in first.stderr  # default floor: Read denied
    _wait_for(sock)
    second = _launch(env, PRE_READ)
    assert (second.returncode, second.stdout, second.stderr) == (
        first.returncode,
        first.stdout,
        first.stderr,
    )
    assert sock.stat().st_mode & 0o777 == 0o600
    stop_deciders(run_dir)
    _wait_for(sock, present=False)
    assert not list(run_dir.glob("*.pid"))


def _fake_decider(path: str, reply: bytes | None) -> tuple[socket.socket, threading.Event]:
    """A listener at the decider's address that answers ``reply`` (None: hangs)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(8)
    except OSError:
        listener.close()
        raise
    done = threading.Event()

    def serve() -> None:
        conns = []
        listener.settimeout(0.1)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conns.append(conn)
            if reply is not None:
                conn.sendall(reply)
                conn.close()
        for conn in conns:
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener, done


@pytest.mark.parametrize("reply", [None, b"garbage", MAGIC + b"\x07\x00", MAGIC + b"\x00\x00\xff"])
def test_a_decider_that_hangs_or_talks_garbage_is_bypassed_not_trusted(
    run_dir: Path, reply: bytes | None
) -> None:
    env = _env(run_dir, FAK_HOOK_TIMEOUT_S="0.5")
    listener, done = _fake_decider(socket_path(env), reply)
    try:
        got = _launch(env, {"tool": "Write", "args": {"file_path": "x"}})
    finally:
        done.set()
        listener.close()
    assert got.returncode == 0
    assert json.loads(got.stdout)["kind"] == "DENY"  # decided in-process, on the default floor


def test_require_refuses_when_the_decider_does_not_answer(run_dir: Path) -> None:
    env = _env(run_dir, FAK_HOOK_TIMEOUT_S="0.5", FAK_HOOK_DAEMON="require")
    path = socket_path(env)
    listener, done = _fake_decider(path, None)
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the hung one holds the seat: no fresh decider can start
    try:
        got = _launch(env, {"tool": "calculate", "args": {}})
    finally:
        done.set()
        listener.close()
        os.close(lock)
    assert got.returncode == 2
    assert "did not answer" in got.stderr and "Traceback" not in got.stderr


@pytest.mark.parametrize("mode", ["", "require"])
def test_a_run_directory_others_can_enter_is_never_used(tmp_path: Path, mode: str) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    env = _env(shared, FAK_HOOK_DAEMON=mode)
    got = _launch(env, {"tool": "calculate", "args": {}})
    assert list(shared.iterdir()) == []
    if mode:
        assert got.returncode == 2 and "not a private run directory" in got.stderr
    else:
        assert got.returncode == 0 and json.loads(got.stdout)["kind"] == "ALLOW"


@pytest.mark.parametrize("mode", ["", "require"])
def test_a_socket_path_too_long_for_a_unix_socket_is_named_not_blamed_on_the_directory(
    tmp_path: Path, mode: str
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    deep.chmod(0o700)
    env = _env(deep, FAK_HOOK_DAEMON=mode)
    got = _launch(env, {"tool": "calculate", "args": {}})
    assert list(deep.iterdir()) == []  # no decider was started there
    if mode:  # refused, in the hook's own terms, with the cause and the fix
        assert got.returncode == 2 and "over the 100 a Unix socket allows" in got.stderr
        assert "FAK_RUN_DIR" in got.stderr and "not a private" not in got.stderr
    else:  # decided in process, as on any machine without a decider
        assert got.returncode == 0 and json.loads(got.stdout)["kind"] == "ALLOW"


def test_unknown_options_go_to_the_full_command_line(run_dir: Path) -> None:
    got = _launch(_env(run_dir), PRE_READ, "--polcy", "x.json")
    assert got.returncode == 2 and "No such option" in got.stderr  # click's usage error
    assert list(run_dir.iterdir()) == []


@pytest.mark.parametrize(
    "frame",
    [b"", b"FAKHOOK0", MAGIC + b"\x00\x00\x00\x09ab", MAGIC + b"\x00\x00\x00\x00" * 5 + b"x"],
)
def test_parse_request_refuses_anything_but_one_whole_frame(frame: bytes) -> None:
    with pytest.raises(hookd.RequestError):
        hookd.parse_request(frame)


def _ask_in_thread(decider: hookd.Decider, frame: bytes) -> bytes:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker = threading.Thread(target=decider.handle, args=(theirs,))
    worker.start()
    ours.sendall(frame)
    ours.shutdown(socket.SHUT_WR)
    reply = b""
    while chunk := ours.recv(65536):
        reply += chunk
    worker.join()
    ours.close()
    return reply


def _reply(code: int, out: str, err: str) -> bytes:
    o, e = out.encode(), err.encode()
    return MAGIC + bytes((0, code)) + len(o).to_bytes(4, "big") + o + len(e).to_bytes(4, "big") + e


def test_the_decider_answers_what_the_in_process_path_answers_and_reloads_an_edited_policy(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    decider = hookd.Decider(str(tmp_path / "x.sock"), idle_s=60)
    env = {"FAK_BLOB_DIR": str(tmp_path / "cas")}
    payloads = [
        PRE_READ,
        {**PRE_READ, "tool_name": "Write"},
        {"tool": "Read", "args": {}},
        "not json",
        {**PRE_READ, "hook_event_name": "PostToolUse", "tool_response": "AKIAQ3EGRTWK5NX7LB4M"},
    ]
    for payload in payloads:
        raw = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        frame = request_frame(raw, str(policy), "auto", str(tmp_path), env)
        want = answer(
            raw,
            policy_path=str(policy),
            fmt="auto",
            cwd=str(tmp_path),
            environ=env,
            state=HookState(),
        )
        assert _ask_in_thread(decider, frame) == _reply(want.exit_code, want.stdout, want.stderr)
    # an edited manifest is picked up on the next call (its size and mtime are in the key)
    policy.write_text(json.dumps({"allow": [], "deny": {"Read": "POLICY_BLOCK"}}))
    raw = json.dumps(PRE_READ).encode()
    reply = _ask_in_thread(decider, request_frame(raw, str(policy), "auto", str(tmp_path), env))
    assert b"POLICY_BLOCK" in reply and reply[len(MAGIC) + 1] == 2


def test_a_decider_whose_code_changed_hands_the_call_back_and_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decider = hookd.Decider(str(tmp_path / "x.sock"), idle_s=60)
    monkeypatch.setattr(hookd, "_code_fingerprint", lambda: -1)
    decider._checked = 0.0  # due for a check
    frame = request_frame(b"{}", "", "auto", str(tmp_path), {})
    assert _ask_in_thread(decider, frame) == MAGIC + b"\x01\x00"
    assert decider._stop.is_set()


def test_the_launcher_is_light(tmp_path: Path) -> None:
    """The fast path imports neither click nor the library it hands the call to."""
    probe = (
        "import sys\n"
        "from fak.hooks import client as hookclient\n"
        "heavy = [m for m in ('click', 'fak.policy', 'fak.kernel', 'json', 'pydantic') "
        "if m in sys.modules]\n"
        "print(heavy)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert got.stdout.strip() == "[]"
