"""``fak.gateway.serving``: the policy follower of a worker fleet, on a scripted epoch feed."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from fak.gateway.serving import follow_policy
from fak.kernel import Kernel
from fak.policy import Policy

pytestmark = pytest.mark.gateway


class _CountingKernel(Kernel):
    replaced = 0

    def replace_policy(self, policy: Policy) -> None:
        self.replaced += 1
        super().replace_policy(policy)


def _feed(bumps: list[tuple[str, int]], done: threading.Event) -> Any:
    def follow(on_change: Any, stop: threading.Event) -> None:
        for kind, value in bumps:
            on_change(kind, value)
        done.set()

    return follow


def test_a_trust_bump_loads_the_policy_file_and_a_world_bump_does_not(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"allow": ["read_notes"]}))
    kernel = _CountingKernel(Policy.load(str(path)))
    path.write_text(json.dumps({"allow": ["get_weather"]}))
    loads: list[str] = []

    def reloader() -> tuple[Any, Any]:
        fresh = Policy.load(str(path))
        loads.append(fresh.version)
        return fresh, fresh.summary()

    done, warnings = threading.Event(), []
    feed = _feed([("world", 1), ("trust", 1), ("trust", 2)], done)
    follow_policy(kernel, reloader, feed, warnings.append)
    assert done.wait(10)
    assert kernel.policy_version == Policy.load(str(path)).version
    assert len(loads) == 2 and warnings == []
    assert kernel.replaced == 1  # the second trust bump found that policy already in force


def test_a_broken_file_keeps_the_policy_in_force_and_says_so(tmp_path: Path) -> None:
    kernel = Kernel(Policy.default())
    before = kernel.policy_version

    def reloader() -> tuple[Any, Any]:
        msg = "no such file"
        raise OSError(msg)

    done, warnings = threading.Event(), []
    follow_policy(kernel, reloader, _feed([("trust", 1)], done), warnings.append)
    assert done.wait(10)
    assert kernel.policy_version == before
    assert warnings == ["policy reload after a fleet trust bump failed: no such file"]
