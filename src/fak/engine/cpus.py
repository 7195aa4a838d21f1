"""How many CPUs this process may actually use: the engine's default thread count (tier T3).

``os.cpu_count()`` counts the machine's CPUs, not this process's share of them. The share is
the smaller of the CPU affinity mask (``taskset``, cpusets) and the CFS bandwidth quota of the
process's cgroup (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``),
rounded down, at least 1. Reads only ``/proc`` and ``/sys/fs/cgroup``; it never reads the
environment and never changes a setting. No torch here: this is plain arithmetic over files.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuBudget", "cgroup_quota", "cpu_budget"]

_CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True, slots=True)
class CpuBudget:
    """What bounds this process's CPUs: ``usable`` = min(affinity, floor(quota)), at least 1.

    ``quota`` is ``None`` when no cgroup quota applies (or none could be read).
    """

    affinity: int
    quota: float | None
    usable: int

    @property
    def source(self) -> str:
        """``"cgroup-quota"`` when the quota is what limits, else ``"affinity"``."""
        if self.quota is not None and math.floor(self.quota) < self.affinity:
            return "cgroup-quota"
        return "affinity"


def _affinity() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _cgroup_paths(proc_cgroup: str) -> list[tuple[str, str]]:
    """(controllers, path) pairs from ``/proc/self/cgroup`` lines ``id:controllers:path``."""
    out = []
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            out.append((parts[1], parts[2]))
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _v2_quota(directory: Path) -> float | None:
    text = _read(directory / "cpu.max")  # "max 100000" or "150000 100000"
    if text is None:
        return None
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota, period = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _v1_quota(directory: Path) -> float | None:
    quota_text = _read(directory / "cpu.cfs_quota_us")
    period_text = _read(directory / "cpu.cfs_period_us")
    if quota_text is None or period_text is None:
        return None
    try:
        quota, period = int(quota_text), int(period_text)
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_quota(root: Path = _CGROUP_ROOT, proc_cgroup: str | None = None) -> float | None:
    """The tightest CFS quota (in CPUs) on this process's cgroup and its ancestors, if any.

    ``root`` and ``proc_cgroup`` (the text of ``/proc/self/cgroup``) are parameters so a test
    can point them at a fake hierarchy.
    """
    if proc_cgroup is None:
        proc_cgroup = _read(Path("/proc/self/cgroup")) or ""
    found: list[float] = []
    for controllers, rel in _cgroup_paths(proc_cgroup):
        if controllers == "":  # cgroup v2 (at the root, or under unified/ on a hybrid host)
            unified = root / "unified"
            base = (
                unified if not (root / "cgroup.controllers").exists() and unified.is_dir() else root
            )
            reader = _v2_quota
        elif "cpu" in controllers.split(","):  # cgroup v1: the cpu controller's hierarchy
            mount = next(
                (root / n for n in (controllers, "cpu,cpuacct", "cpu") if (root / n).is_dir()),
                None,
            )
            if mount is None:
                continue
            base, reader = mount, _v1_quota
        else:
            continue
        # the process's own cgroup and every ancestor up to the mount root can each cap it
        node = base / rel.lstrip("/")
        while True:
            quota = reader(node)
            if quota is not None:
                found.append(quota)
            if node == base or base not in node.parents:
                break
            node = node.parent
    return min(found) if found else None


def cpu_budget() -> CpuBudget:
    """This process's usable CPUs now (affinity and cgroup quota; see the module docstring)."""
    affinity = _affinity()
    quota = cgroup_quota()
    usable = affinity if quota is None else min(affinity, max(1, math.floor(quota)))
    return CpuBudget(affinity=affinity, quota=quota, usable=max(1, usable))
