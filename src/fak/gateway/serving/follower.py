"""The policy follower of a worker fleet (tier T3): a trust bump elsewhere reloads the policy here.

With shared epochs (``FAK_CAS_URL``), a policy reload on one worker bumps the fleet's trust
epoch; every other worker follows the change feed in a daemon thread and loads the policy file
again. A worker already on that policy does nothing, so the reloads settle instead of echoing.
The feed is the kernel side's port (``fak.kernel.shared.RedisEpochs.follow``): this module never
touches Redis itself. ``shared_change_log`` opens the fleet's coherence change-feed log the same
way (``fak.kernel.shared_feed.RedisChangeLog``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from fak.kernel import Kernel

__all__ = ["EpochFeed", "follow_policy", "shared_change_log", "trust_feed"]

OnChange = Callable[[str, int], None]
EpochFeed = Callable[[OnChange, threading.Event], None]
"""Calls ``on_change(kind, value)`` for every epoch bump from now on, until the event is set."""


def trust_feed(cas_url: str) -> EpochFeed:
    """The fleet's epoch change feed on the shared store at ``cas_url``."""
    from fak.cas.redis import connect
    from fak.kernel.shared import RedisEpochs

    return RedisEpochs(connect(cas_url)).follow


def shared_change_log(cas_url: str) -> Any:
    """The change feed's events on the shared store at ``cas_url`` (a ``fak.recall.ChangeLog``
    every worker reads and writes, so ``/v1/fak/changes`` is the fleet's, not one worker's)."""
    from fak.cas.redis import connect
    from fak.kernel.shared_feed import RedisChangeLog

    return RedisChangeLog(connect(cas_url))


def follow_policy(
    kernel: Kernel,
    reloader: Callable[[], tuple[Any, Any]],
    feed: EpochFeed,
    warn: Callable[[str], None],
) -> threading.Event:
    """Follow ``feed`` in a daemon thread: on a trust bump, ``reloader()`` and swap the policy
    in when its version differs. A file that no longer loads keeps the policy in force and is
    reported through ``warn``. Returns the event that stops the thread."""

    def on_change(kind: str, value: int) -> None:
        if kind != "trust":
            return
        try:
            fresh, _ = reloader()
        except Exception as exc:  # a broken file: keep the policy in force, say so
            warn(f"policy reload after a fleet trust bump failed: {exc}")
            return
        if fresh.version != kernel.policy_version:
            kernel.replace_policy(fresh)

    stop = threading.Event()
    thread = threading.Thread(target=feed, args=(on_change, stop), name="fak-policy", daemon=True)
    thread.start()
    return stop
