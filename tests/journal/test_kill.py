"""Kill test: a real process appending to the journal is SIGKILLed mid-stream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fak.journal import Journal, verify

WRITER = """
import hashlib, sys
from fak.journal import Journal
journal = Journal(sys.argv[1])
i = 0
while True:
    journal.append({
        "kind": "DECIDE" if i % 3 else "QUARANTINE",
        "tool": f"tool_{i}",
        "trace_id": f"t{i}",
        "verdict": "ALLOW",
        "by": "kill-test",
        "digest": hashlib.sha256(str(i).encode()).hexdigest(),
    })
    i += 1
"""


def _complete_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


@pytest.mark.parametrize("min_rows", [1, 40, 200])
def test_sigkill_mid_stream_loses_no_complete_row_and_the_chain_continues(
    tmp_path: Path, min_rows: int
) -> None:
    path = tmp_path / "journal.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
    try:
        deadline = time.monotonic() + 60
        while not path.exists() or _complete_lines(path) < min_rows:
            assert proc.poll() is None, "the writer died on its own"
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    complete = _complete_lines(path)
    assert complete >= min_rows
    report = verify(path)
    # Every complete row verifies; at most the final, unterminated line is torn.
    assert report.rows == complete
    assert report.ok or (report.torn and report.bad_row == complete + 1)

    with Journal(path) as journal:
        assert journal.head.seq == complete
        journal.append({"kind": "DECIDE", "tool": "after_restart", "by": "kill-test"})
    after = verify(path)
    assert after.ok
    assert after.rows == complete + 1
