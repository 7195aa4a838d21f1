"""ARCHITECTURE.md, enforced: the tier rule, the room list, module size, where doubles live,
which packages may import which heavy dependencies, and what the engine may import."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "fak"
MAP = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _tiers(text: str) -> dict[str, int]:
    """The tier table of ARCHITECTURE.md: rows like ``| `kernel` | 2 | ... |``."""
    rows = re.findall(r"^\| `(\w+)` \| (\d) \|", text, flags=re.MULTILINE)
    return {name: int(tier) for name, tier in rows}


TIERS: dict[str, int] = _tiers(MAP)

# Third-party packages and the fak packages that may import them. Every third-party import in
# src/fak must be classified here or in CORE: a new dependency fails
# test_every_third_party_import_is_classified until it is placed.
HEAVY: dict[str, set[str]] = {
    "torch": {"engine", "bench"},
    "numpy": {"engine"},
    "gguf": {"engine"},
    "tokenizers": {"engine"},
    "jinja2": {"engine"},
    "rich": {"engine"},
    "transformers": set(),
    "starlette": {"gateway", "testing"},
    "uvicorn": {"gateway"},
    "anyio": {"gateway", "cli"},
    "mcp": {"gateway"},
    "aiohttp": {"gateway"},
    "httpx": {"gateway"},
    "httpx2": {"gateway"},  # what the mcp SDK's Streamable-HTTP client is built on
    "prometheus_client": {"gateway"},
    "yaml": {"gateway"},  # fak serve --upstreams reads LiteLLM's YAML config
    "redis": {"cas", "kernel"},
    "psycopg": {"journal"},
    "psycopg_pool": {"journal"},
    "cryptography": {"certs"},
    "click": {"cli"},
}
# The core install's own dependencies (pyproject's [project] dependencies), usable anywhere.
CORE = {"orjson", "pydantic", "re2", "idna", "publicsuffixlist"}

MAX_LINES = 800
# Names that mark a test double or a demo; such modules live in fak.testing (the offline demo is
# the ``fak agent --offline`` verb itself, so it sits beside that verb in cli).
DOUBLE = re.compile(r"(^|_)(mock|fake|stub|dummy|demo)(_|$)")
DOUBLES_ALLOWED = {"testing", "cli"}
ENGINE_MAY_IMPORT = {"abi", "config", "engine"}


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


def _modules(root: Path = SRC) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_tier_table_is_read_from_architecture_md() -> None:
    assert TIERS["abi"] == 0 and TIERS["kernel"] == 2 and TIERS["cli"] == max(TIERS.values())
    top = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()} | {"config"}
    assert set(TIERS) == top


def test_the_room_list_matches_the_tree() -> None:
    listed = set(re.findall(r"^- `fak/([\w/]+)/` — ", MAP, flags=re.MULTILINE))
    tree = {
        str(p.parent.relative_to(SRC.parent))[len("fak/") :]
        for p in SRC.rglob("__init__.py")
        if p.parent != SRC
    }
    assert listed == tree, (
        f"ARCHITECTURE.md lists {sorted(listed - tree)} not in the tree, "
        f"and the tree has {sorted(tree - listed)} not listed"
    )


def test_no_module_is_over_the_size_ceiling() -> None:
    big = []
    for path in _modules():
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES:
            big.append(f"{path.relative_to(SRC)}: {lines} lines")
    assert big == []


def test_doubles_and_demos_live_in_fak_testing() -> None:
    stray = []
    for path in _modules():
        pkg = _package_of(path)
        if pkg in DOUBLES_ALLOWED:
            continue
        if DOUBLE.search(path.stem.lower()):
            stray.append(str(path.relative_to(SRC)))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and re.match(
                r"(Mock|Fake|Stub|Dummy)[A-Z]", node.name
            ):
                stray.append(f"{path.relative_to(SRC)}: class {node.name}")
    assert stray == []


def test_the_engine_imports_only_abi_and_config() -> None:
    bad = []
    for path in _modules(SRC / "engine"):
        for lineno, module in _imports(path):
            parts = module.split(".")
            if parts[0] == "fak" and len(parts) > 1 and parts[1] not in ENGINE_MAY_IMPORT:
                bad.append(f"{path.relative_to(SRC)}:{lineno}: {module}")
    assert bad == []


def test_every_third_party_import_is_classified() -> None:
    unknown = set()
    for path in _modules():
        for _, module in _imports(path):
            top = module.split(".")[0]
            if top == "fak" or top in sys.stdlib_module_names:
                continue
            if top not in HEAVY and top not in CORE:
                unknown.add(f"{path.relative_to(SRC)}: {top}")
    assert unknown == set()


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
