"""Pinned ordinary files for the by-source corpus, so that two machines build the same corpus.

The corpus's benign text (and the carriers its attacks are planted into) comes from files other
people wrote that a machine already has: Python packages and the OS's documentation. Read from
whatever happens to be installed, the corpus followed the machine: the project venv (which also
holds fak itself, README included, and resolves its ranges to each day's releases) and the
Debian packages ``make test`` installs changed the train split, so the trainer's weights did not
reproduce. Two pin files fix what is read:

- ``benchmarks/data/corpus_python_pins.txt``: the Python distributions, installed with
  ``--no-deps`` into ``benchmarks/results/corpus-benign`` (``pip --target``; git-ignored) and
  read from there instead of the project venv. Not fak itself, and not torch (a CPU build from
  a local file on some machines, a multi-GB CUDA build from PyPI on others).
- ``benchmarks/data/corpus_debian_pins.txt``: ``package version`` lines. An OS file is read only
  when a pinned package at its pinned version owns it (dpkg's file lists), so packages a test
  setup adds, and packages at other versions, change nothing; ``drift()`` names them.

``python benchmarks/corpus_pins.py --check`` prints what differs on this machine.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYTHON_PINS = ROOT / "benchmarks" / "data" / "corpus_python_pins.txt"
DEBIAN_PINS = ROOT / "benchmarks" / "data" / "corpus_debian_pins.txt"
BENIGN_SITE = ROOT / "benchmarks" / "results" / "corpus-benign"  # git-ignored
DPKG = Path("/var/lib/dpkg")
OS_PREFIX = "/usr/"
"""Files under this prefix are the OS's: read only when a pinned package owns them."""


def install_python(target: Path = BENIGN_SITE) -> None:
    """The pinned distributions' files into ``target`` (``--no-deps``: nothing is imported)."""
    target.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade"]
    subprocess.run([*pip, "--target", str(target), "-r", str(PYTHON_PINS)], check=True)
    for beside in ("bin", "include", "share"):  # scripts, headers, data: a venv keeps them apart
        shutil.rmtree(target / beside, ignore_errors=True)


def _lines(path: Path) -> list[str]:
    """A pin file's lines, less comments and blanks."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def _pins(path: Path) -> dict[str, str]:
    """``package version`` lines: name -> version."""
    return dict(line.split(maxsplit=1) for line in _lines(path))


def _installed() -> dict[str, tuple[str, str]]:
    """Installed Debian packages: name -> (version, the name of its file list)."""
    found: dict[str, tuple[str, str]] = {}
    text = (DPKG / "status").read_text(encoding="utf-8", errors="replace") if DPKG.exists() else ""
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if ": " in line and line[0] != " "
        )
        if "install ok installed" not in fields.get("Status", ""):
            continue
        name, arch = fields["Package"], fields.get("Architecture", "all")
        listed = name if (DPKG / "info" / f"{name}.list").exists() else f"{name}:{arch}"
        found[name] = (fields.get("Version", ""), listed)
    return found


@functools.cache
def os_files() -> frozenset[str]:
    """The paths owned by pinned Debian packages installed at their pinned versions."""
    pins, installed = _pins(DEBIAN_PINS), _installed()
    paths: set[str] = set()
    for name, version in pins.items():
        got = installed.get(name)
        if got is None or got[0] != version:
            continue
        listed = DPKG / "info" / f"{got[1]}.list"
        if listed.exists():
            paths.update(listed.read_text(encoding="utf-8", errors="replace").splitlines())
    return frozenset(paths)


def allowed(path: Path) -> bool:
    """Whether the corpus may read ``path``: any file outside the OS's tree; an OS file only
    when a pinned package owns it."""
    text = str(path)
    return not text.startswith(OS_PREFIX) or text in os_files()


def drift() -> list[str]:
    """What differs here from the pins (empty: this machine builds the pinned corpus)."""
    out: list[str] = []
    installed = _installed()
    for name, version in sorted(_pins(DEBIAN_PINS).items()):
        got = installed.get(name)
        if got is None:
            out.append(f"debian {name} {version}: not installed")
        elif got[0] != version:
            out.append(f"debian {name} {version}: installed {got[0]}")
    wanted = {canonicalize_name(n): v for n, v in (p.split("==") for p in _lines(PYTHON_PINS))}
    dists = metadata.distributions(path=[str(BENIGN_SITE)]) if BENIGN_SITE.exists() else ()
    have = {canonicalize_name(d.metadata["Name"]): d.version for d in dists}
    for name, version in sorted(wanted.items()):
        if have.get(name) != version:
            out.append(f"python {name}=={version}: {have.get(name) or 'not installed'}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="install the Python pins")
    parser.add_argument("--check", action="store_true", help="print what differs from the pins")
    args = parser.parse_args()
    if args.install:
        install_python()
    if args.check or not args.install:
        differs = drift()
        print("\n".join(differs) or "this machine has every pinned file")
        raise SystemExit(1 if differs else 0)


if __name__ == "__main__":
    main()
