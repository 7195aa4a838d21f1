"""A downstream MCP server that writes what is not JSON-RPC (finding D5 of the second hostile run):
its session ends at the first bad line, even during set-up; it is restarted with a climbing
backoff; the SDK's parse traceback is logged once per burst, not once per line."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from fak.gateway.mcp.config import ServerSpec
from fak.gateway.mcp.downstream import Downstream, DownstreamHooks

GARBAGE = """
import sys, time
with open(sys.argv[1], "a") as f:
    f.write("start\\n")
out = sys.stdout
for _ in range(50_000):
    out.write("this is not json-rpc at all\\n")
    out.flush()
time.sleep(3600)
"""
# 50,000 bad lines (1.4 MB, many pipe-fulls), then silence; it never reads its stdin. An endless
# flood would measure the SDK, not fak: on a stop the SDK closes stdin and drains the child's
# stdout for up to 2 s before it kills it (mcp.client.stdio, the spec's shutdown order), and
# against a child that never stops writing that drain keeps this process busy for those 2 s.


async def _nothing(*_: Any) -> None:
    return None


def test_D5_a_server_writing_garbage_is_restarted_and_logged_once_per_burst(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    starts = tmp_path / "starts"
    script = tmp_path / "garbage.py"
    script.write_text(GARBAGE, encoding="utf-8")
    spec = ServerSpec("junk", command=sys.executable, args=(str(script), str(starts)))
    hooks = DownstreamHooks(_nothing, _nothing, _nothing, _nothing)
    errlog = (tmp_path / "stderr").open("w", encoding="utf-8")
    down = Downstream(spec, hooks, backoff=(0.05, 0.1, 0.2, 0.4), errlog=errlog)

    async def run_for(seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await down.run()

    caplog.set_level(logging.DEBUG)
    t0 = time.process_time()
    anyio.run(run_for, 4.0)
    cpu = time.process_time() - t0
    errlog.close()
    launches = starts.read_text(encoding="utf-8").count("start")
    assert down.connects == 0  # never a session: initialize never got an answer
    # restarted (each stop of the child takes the SDK a moment), not left in one broken session
    assert launches >= 2
    assert launches <= 12  # with the backoff climbing (0.05 + 0.1 + 0.2 + 0.4 * n)
    assert down.protocol_errors >= launches - 1
    parse_lines = [r for r in caplog.records if r.getMessage().startswith("Failed to parse")]
    assert 1 <= len(parse_lines) <= 2  # one per 10 s burst; the first may be from an earlier test
    assert all(r.exc_info is None for r in parse_lines)
    assert cpu < 2.0  # this process did not spin on the garbage for the whole run (4 s)
