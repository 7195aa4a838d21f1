"""The by-source corpus reads pinned files only: an OS file when a pinned Debian package at its
pinned version owns it, and what differs from the pins is named (benchmarks/corpus_pins.py)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def pins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The module over a made-up dpkg database: ``docs`` pinned at the installed version, ``man``
    pinned at another version, ``extra`` installed but not pinned, ``gone`` pinned but absent."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        module = importlib.import_module("corpus_pins")
    finally:
        sys.path.remove(str(BENCHMARKS))
    dpkg = tmp_path / "dpkg"
    (dpkg / "info").mkdir(parents=True)
    (dpkg / "status").write_text(
        "Package: docs\nStatus: install ok installed\nArchitecture: all\nVersion: 1.0-1\n\n"
        "Package: man\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.1\n\n"
        "Package: extra\nStatus: install ok installed\nArchitecture: all\nVersion: 3\n\n"
        "Package: removed\nStatus: deinstall ok config-files\nVersion: 4\n"
    )
    (dpkg / "info" / "docs.list").write_text("/usr/share/doc/docs\n/usr/share/doc/docs/README\n")
    (dpkg / "info" / "man:amd64.list").write_text("/usr/share/man/man1/man.1.gz\n")
    (dpkg / "info" / "extra.list").write_text("/usr/share/doc/extra/README\n")
    debian = tmp_path / "debian.txt"
    debian.write_text("# comment\ndocs 1.0-1\nman 2.0  # pinned at another version\ngone 5\n")
    python = tmp_path / "python.txt"
    python.write_text("# none\n")
    monkeypatch.setattr(module, "DPKG", dpkg)
    monkeypatch.setattr(module, "DEBIAN_PINS", debian)
    monkeypatch.setattr(module, "PYTHON_PINS", python)
    monkeypatch.setattr(module, "BENIGN_SITE", tmp_path / "site")
    module.os_files.cache_clear()
    yield module
    module.os_files.cache_clear()


def test_an_os_file_is_read_only_when_a_pinned_package_at_its_version_owns_it(
    pins: ModuleType,
) -> None:
    assert pins.allowed(Path("/usr/share/doc/docs/README"))
    assert not pins.allowed(Path("/usr/share/doc/extra/README"))  # installed, not pinned
    assert not pins.allowed(Path("/usr/share/man/man1/man.1.gz"))  # pinned at 2.0, has 2.1
    assert not pins.allowed(Path("/usr/share/doc/docs/changelog.gz"))  # no package owns it
    assert pins.allowed(Path("/work/site-packages/pkg/README.md"))  # not the OS's


def test_what_differs_from_the_pins_is_named(pins: ModuleType) -> None:
    assert pins.drift() == ["debian gone 5: not installed", "debian man 2.0: installed 2.1"]


def test_a_python_pin_missing_from_the_pinned_site_is_named(
    pins: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "python.txt").write_text("Some_Pkg==1.2\nother==3\n")
    meta = tmp_path / "site" / "some_pkg-1.2.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: some.pkg\nVersion: 1.2\n\nabout")
    assert [line for line in pins.drift() if line.startswith("python")] == [
        "python other==3: not installed"
    ]


def test_the_committed_pins_parse_and_leave_out_fak_and_torch() -> None:
    debian = (BENCHMARKS / "data" / "corpus_debian_pins.txt").read_text().splitlines()
    python = (BENCHMARKS / "data" / "corpus_python_pins.txt").read_text().splitlines()
    assert all(len(line.split()) == 2 for line in debian if line and line[0] != "#")
    names = {line.split("==")[0].lower() for line in python if line and line[0] != "#"}
    assert len(names) > 100
    assert not names & {"fak", "torch"}
