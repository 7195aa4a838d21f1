"""The worker supervisor of ``fak serve --workers N`` (tier T3): fork, restart, stop.

``run_workers`` forks N processes serving one listening socket (each builds its own kernel
after the fork), starts a worker again when it dies, stops all on SIGINT/SIGTERM, and stops the
whole server when a worker fails within its first seconds (a store down at start, a bad model)
rather than restarting it in a loop. It says what happens through the caller's ``Console`` and
returns the exit code; it never exits the supervising process itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Console", "run_workers"]

_START_GRACE_S = 5.0  # a worker dying with an error this soon failed at start


@dataclass(frozen=True, slots=True)
class Console:
    """How serving talks to the operator (the CLI renders the lines; the gateway has no UI)."""

    say: Callable[[str], None]  # a line on stderr
    warn: Callable[[str], None]  # a warning line on stderr


def run_workers(
    count: int, sock: socket.socket, start: Callable[[int], None], console: Console
) -> int:
    """Fork ``count`` workers running ``start(index)``; return 0, or the exit code of a worker
    that failed at start. ``start`` may ``sys.exit(code)``: that is the worker's exit code."""
    children: dict[int, tuple[int, float]] = {}
    stopping = False

    def spawn(index: int) -> None:
        pid = os.fork()
        if pid == 0:  # the worker: build everything here, after the fork
            code = 0
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                start(index)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children[pid] = (index, time.monotonic())

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for index in range(count):
        spawn(index)
    failed = 0
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        entry = children.pop(pid, None)
        if entry is None or stopping:
            continue
        index, started = entry
        code = os.waitstatus_to_exitcode(status)
        if time.monotonic() - started < _START_GRACE_S and code != 0:
            console.say(f"error: worker {index + 1} failed at start (exit {code}); stopping")
            failed = code if code > 0 else 1
            stop(signal.SIGTERM, None)
            continue
        console.warn(f"worker {index + 1} (pid {pid}) exited ({code}); starting it again")
        spawn(index)
    sock.close()
    return failed
