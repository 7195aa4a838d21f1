"""The engine's default thread count: affinity mask and cgroup quota, not os.cpu_count()."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine
pytest.importorskip("torch", reason="engine extra not installed: pip install 'fak[engine]'")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")


def test_v2_quota_is_read_from_the_process_cgroup(tmp_path: Path) -> None:
    from fak.engine.cpus import cgroup_quota

    _write(tmp_path / "cgroup.controllers", "cpu memory\n")
    _write(tmp_path / "svc" / "cpu.max", "150000 100000\n")
    assert cgroup_quota(tmp_path, "0::/svc\n") == 1.5


def test_v2_tightest_ancestor_wins_and_max_means_none(tmp_path: Path) -> None:
    from fak.engine.cpus import cgroup_quota

    _write(tmp_path / "cgroup.controllers", "cpu\n")
    _write(tmp_path / "a" / "cpu.max", "100000 100000\n")
    _write(tmp_path / "a" / "b" / "cpu.max", "max 100000\n")
    assert cgroup_quota(tmp_path, "0::/a/b\n") == 1.0
    _write(tmp_path / "a" / "cpu.max", "max 100000\n")
    assert cgroup_quota(tmp_path, "0::/a/b\n") is None


def test_v1_cpu_controller_quota(tmp_path: Path) -> None:
    from fak.engine.cpus import cgroup_quota

    _write(tmp_path / "cpu,cpuacct" / "job" / "cpu.cfs_quota_us", "250000\n")
    _write(tmp_path / "cpu,cpuacct" / "job" / "cpu.cfs_period_us", "100000\n")
    text = "4:memory:/job\n3:cpu,cpuacct:/job\n0::/job\n"
    assert cgroup_quota(tmp_path, text) == 2.5
    _write(tmp_path / "cpu,cpuacct" / "job" / "cpu.cfs_quota_us", "-1\n")
    assert cgroup_quota(tmp_path, text) is None


def test_hybrid_host_reads_v2_under_unified(tmp_path: Path) -> None:
    from fak.engine.cpus import cgroup_quota

    _write(tmp_path / "unified" / "x" / "cpu.max", "50000 100000\n")
    assert cgroup_quota(tmp_path, "1:cpu:/\n0::/x\n") == 0.5


def test_budget_follows_the_affinity_mask() -> None:
    from fak.engine.cpus import cpu_budget

    budget = cpu_budget()
    assert budget.affinity == len(os.sched_getaffinity(0))
    assert 1 <= budget.usable <= budget.affinity
    if budget.quota is None:
        assert budget.usable == budget.affinity and budget.source == "affinity"
