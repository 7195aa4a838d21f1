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
    # stdlib-only settings: below the kernel so a bare Kernel() reads FAK_* too (issue 8)
    "config": 1,
    "kernel": 2,
    "recall": 2,
    "certs": 2,
    "gateway": 3,
    "engine": 3,
    "hooks": 3,
    "testing": 4,
    "bench": 4,
    "cli": 5,
}

# Third-party modules that may only appear in the named packages.
# Every optional or heavy third-party import is listed: a new one fails
# test_every_heavy_import_is_listed until it is placed here.
HEAVY: dict[str, set[str]] = {
    "torch": {"engine", "bench"},
    "numpy": {"engine"},
    "gguf": {"engine"},
    "tokenizers": {"engine"},
    "transformers": set(),
    "starlette": {"gateway", "testing"},
    "uvicorn": {"gateway"},
    "mcp": {"gateway"},
    "aiohttp": {"gateway"},
    "httpx": {"gateway"},
    "prometheus_client": {"gateway"},
    "redis": {"cas", "kernel"},
    "psycopg": {"journal"},
    "psycopg_pool": {"journal"},
    "cryptography": {"certs"},
    "click": {"cli"},
}


def _package_of(path: Path, root: Path = SRC) -> str:
    rel = path.relative_to(root)
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


def _violations(root: Path = SRC) -> list[str]:
    bad: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if path.parent == root and path.name == "__init__.py":
            continue
        pkg = _package_of(path, root)
        if pkg not in TIERS:
            bad.append(f"{path}: package {pkg!r} has no tier in ARCHITECTURE.md")
            continue
        tier = TIERS[pkg]
        for lineno, module in _imports(path):
            parts = module.split(".")
            top = parts[0]
            if top in HEAVY and pkg not in HEAVY[top]:
                bad.append(f"{path}:{lineno}: {pkg} may not import {top}")
            if top != "fak" or len(parts) < 2:
                continue
            target = parts[1]
            if target == pkg or target not in TIERS:
                continue
            if TIERS[target] >= tier:
                bad.append(f"{path}:{lineno}: {pkg} (T{tier}) imports {target} (T{TIERS[target]})")
    return bad


def test_no_import_breaks_the_tier_rule() -> None:
    assert _violations() == []


def test_the_checker_catches_an_upward_import_and_a_stray_heavy_import(tmp_path: Path) -> None:
    (tmp_path / "abi").mkdir()
    (tmp_path / "abi" / "bad.py").write_text("from fak.kernel import Kernel\n", encoding="utf-8")
    (tmp_path / "policy").mkdir()
    (tmp_path / "policy" / "heavy.py").write_text("import torch\n", encoding="utf-8")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "ok.py").write_text("from fak.kernel import Kernel\n", encoding="utf-8")
    found = _violations(tmp_path)
    assert len(found) == 2
    assert found[0].endswith("abi/bad.py:1: abi (T0) imports kernel (T2)")
    assert found[1].endswith("policy/heavy.py:1: policy may not import torch")


# -- seams are typed: no attribute probes across them (issue 22) ---------------------------------
PROBE_FREE = ("gateway", "recall", "kernel")


def _probes(root: Path = SRC) -> list[str]:
    """``getattr(x, "name", None)`` and ``hasattr(x, "name")`` in the probe-free packages: an
    optional ability is a Protocol member that always exists, so a rename fails mypy."""
    bad: list[str] = []
    for pkg in PROBE_FREE:
        for path in sorted((root / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                    continue
                name, args = node.func.id, node.args
                probe = (
                    name == "getattr"
                    and len(args) == 3
                    and isinstance(args[2], ast.Constant)
                    and args[2].value is None
                ) or name == "hasattr"
                if probe:
                    bad.append(f"{path}:{node.lineno}: {name}(...) probe")
    return bad


def test_no_attribute_probes_in_the_gateway_recall_or_kernel() -> None:
    assert _probes() == []


def test_the_probe_checker_catches_getattr_none_and_hasattr(tmp_path: Path) -> None:
    for pkg in PROBE_FREE:
        (tmp_path / pkg).mkdir()
    (tmp_path / "kernel" / "a.py").write_text(
        'x = getattr(object(), "batch", None)\ny = getattr(object(), "n", 0)\n', encoding="utf-8"
    )
    (tmp_path / "gateway" / "b.py").write_text(
        'if hasattr(object(), "stats"):\n    pass\n', encoding="utf-8"
    )
    found = _probes(tmp_path)
    assert len(found) == 2
    assert found[0].endswith("gateway/b.py:1: hasattr(...) probe")
    assert found[1].endswith("kernel/a.py:1: getattr(...) probe")
