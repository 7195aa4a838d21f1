"""The tier rule of ARCHITECTURE.md: a module imports only from lower tiers and its own package."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "fak"

TIERS: dict[str, int] = {
    "abi": 0,
    "cas": 1,
    "journal": 1,
    "policy": 1,
    "screen": 1,
    "wire": 1,
    "kernel": 2,
    "recall": 2,
    "certs": 2,
    "config": 2,
    "gateway": 3,
    "engine": 3,
    "cli": 4,
}

# Third-party modules that may only appear in the named packages.
HEAVY = {"torch": {"engine"}, "starlette": {"gateway"}, "uvicorn": {"gateway"}}


def _package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    head = rel.parts[0]
    return head[:-3] if head.endswith(".py") else head


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _violations() -> list[str]:
    bad: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent == SRC and path.name == "__init__.py":
            continue
        pkg = _package_of(path)
        if pkg not in TIERS:
            bad.append(f"{path}: package {pkg!r} has no tier in ARCHITECTURE.md")
            continue
        tier = TIERS[pkg]
        for lineno, module in _imports(path):
            parts = module.split(".")
            root = parts[0]
            if root in HEAVY and pkg not in HEAVY[root]:
                bad.append(f"{path}:{lineno}: {pkg} may not import {root}")
            if root != "fak" or len(parts) < 2:
                continue
            target = parts[1]
            if target == pkg or target not in TIERS:
                continue
            if TIERS[target] >= tier:
                bad.append(f"{path}:{lineno}: {pkg} (T{tier}) imports {target} (T{TIERS[target]})")
    return bad


def test_no_import_breaks_the_tier_rule() -> None:
    assert _violations() == []


def test_the_checker_catches_an_upward_import(tmp_path: Path) -> None:
    # A module in abi importing the kernel must be reported.
    fake = tmp_path / "mod.py"
    fake.write_text("from fak.kernel import Kernel\n", encoding="utf-8")
    assert _imports(fake) == [(1, "fak.kernel")]
    assert TIERS["kernel"] >= TIERS["abi"]
