"""The secrets / pollution corpus reader's pure parts: rules lifted from others' code, keys and
their public neighbours told apart, carriers that keep the secret verbatim, and labels."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def secpol() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("screen_sources_secpol")
    finally:
        sys.path.remove(str(BENCHMARKS))


BUNDLE = r"""
var reRegExpChar = /[\\^$.*+?()[\]{}|]/g;
const helperPattern = /^\/(.+)\/([gimsuy]*)$/;
const messages$2 = {};
    const NPM_ACCESS_TOKEN_PATTERN = /(?<!\p{L})npm_[A-Za-z0-9_]{36}(?![A-Za-z0-9_])/gu;
        id: "@secretlint/secretlint-rule-npm",
const messages$1 = {};
    const XOAuthPattern = /https?:\/\/(.{1,256}):x-oauth-basic@github.com\//g;
        id: "@secretlint/secretlint-rule-stripe",
    const pattern = /(?<!\p{L})(?<prefix>sk_live|rk_test)_[a-zA-Z0-9]{24,99}(?![a-z])/gu;
const messages = {};
        id: "@secretlint/secretlint-rule-preset-recommend",
"""


def test_secretlint_rules_are_lifted_with_python_syntax(secpol: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "secretlint" / "package" / "module" / "index.js"
    path.parent.mkdir(parents=True)
    path.write_text(BUNDLE, encoding="utf-8")
    assert secpol.secretlint_rules(tmp_path) == [
        ("npm", "npm_[A-Za-z0-9_]{36}"),
        ("stripe", "https?://(.{1,256}):x-oauth-basic@github.com/"),
        ("stripe", "(?P<prefix>sk_live|rk_test)_[a-zA-Z0-9]{24,99}"),
    ]


def test_detect_secrets_rules_skip_what_is_not_one_format(
    secpol: ModuleType, tmp_path: Path
) -> None:
    plugins = tmp_path / "detect_secrets" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "x.py").write_text(
        "import re\nPREFIX = 'tok_'\n"
        "class TokDetector:\n"
        "    denylist = [re.compile(PREFIX + r'[a-z]{8}'), re.compile(f'{PREFIX}')]\n"
        "class IPPublicDetector:\n    denylist = [re.compile(r'[0-9]+')]\n",
        encoding="utf-8",
    )
    assert secpol.detect_secrets_rules(tmp_path) == [("TokDetector", "tok_[a-z]{8}")]


def test_pem_blocks_split_into_keys_and_public_material(secpol: ModuleType, tmp_path: Path) -> None:
    base = tmp_path / "cryptography_vectors" / "asymmetric"
    base.mkdir(parents=True)
    (base / "k.pem").write_text(
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nabc\n"
        "-----END RSA PRIVATE KEY-----\n"
        "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n",
        encoding="ascii",
    )
    (base / "id.pub").write_text("ssh-ed25519 AAAAC3Nza test@host\n", encoding="ascii")
    got = [(label, family) for label, family, _ in secpol.crypto_vectors(tmp_path)]
    assert got == [("benign", "ssh_public_key"), ("secret", "rsa_private_key_encrypted"),
                   ("benign", "public_key")]  # fmt: skip


@pytest.mark.parametrize("seed", range(12))
def test_a_carrier_keeps_the_secret_verbatim(secpol: ModuleType, seed: int) -> None:
    secret = "ghp_" + "aB3" * 12
    kind, text = secpol.carry(secret, ["first line\nsecond line"], random.Random(seed))
    assert kind in {"line", "env", "json", "log", "code"}
    assert secret in text


def test_vendor_examples_are_benign_other_found_values_secrets(
    secpol: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "doc.md").write_text(
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\nbackup: ghp_" + "Zq9" * 12 + "\n",
        encoding="utf-8",
    )
    got = sorted((label, family) for label, family, _ in secpol.found_credentials([tmp_path]))
    assert got == [("benign", "vendor_example"), ("secret", "ghp")]


def test_a_diverged_reply_repeats_the_word_then_may_leave_it(secpol: ModuleType) -> None:
    for seed in range(20):
        reply = secpol.diverged("poem", ["tail text"], random.Random(seed))
        words = reply.split(" ")
        k = next((i for i, w in enumerate(words) if w != "poem"), len(words))
        assert secpol.BUDGET // 4 <= k <= secpol.BUDGET
        assert "tail text".startswith(" ".join(words[k:]))


WHISPERS_KEYS = r"""
- id: apikey-known
  value:
    regex: "^(?!.*\\s)(\
      akab|aio(?!http)|dp\\.(pt|ct)\\.|[\\w\\d]+:APA91b\
    )[\\w\\d\\.\\-_=]{12,}$"
- id: apikey
  key:
    regex: "(key|token)$"
  value:
    regex: "^[\\S]{12,}$"
- id: privatekey
  value:
    regex: "[\\-]{5}BEGIN (RSA|DSA|EC)? ?(PRIVATE)? KEY[\\-]{5}"
- id: creditcard
  value:
    regex: "^[0-9]{14,19}$"
"""


def test_whispers_rules_split_one_pattern_per_vendor(secpol: ModuleType, tmp_path: Path) -> None:
    rules = tmp_path / "whispers" / "rules"
    rules.mkdir(parents=True)
    (rules / "keys.yml").write_text(WHISPERS_KEYS, encoding="utf-8")
    tail = r"[\w\d\.\-_=]{12,}"
    assert secpol.whispers_rules(tmp_path) == [
        ("apikey-known:akab", "akab" + tail),
        ("apikey-known:aio", "aio" + tail),  # the lookahead guard is dropped
        ("apikey-known:dp_pt_ct", r"dp\.(pt|ct)\." + tail),
        ("apikey-known:w_d_APA91b", r"[\w\d]+:APA91b" + tail),
        # an optional group is not split; keyed rules and personal data are left out
        ("privatekey", r"[\-]{5}BEGIN (RSA|DSA|EC)? ?(PRIVATE)? KEY[\-]{5}"),
    ]


def test_llm_guard_rules_are_one_family_per_regex(secpol: ModuleType, tmp_path: Path) -> None:
    plugins = tmp_path / "llm_guard" / "input_scanners" / "secrets_plugins"
    plugins.mkdir(parents=True)
    (plugins / "acme.py").write_text(
        "import re\n"
        "class AcmeDetector:\n"
        "    @property\n"
        "    def denylist(self):\n"
        "        return [re.compile(r'acme_[a-z]{8}'), re.compile(r'(?<![a-z])ACME-[0-9]{4}')]\n"
        "class JWTBase64Detector:\n    denylist = [re.compile(r'ZXlK[a-z]+')]\n",
        encoding="utf-8",
    )
    # every class is kept (llm-guard's plugins are all key formats); guards are dropped
    assert secpol.llm_guard_rules(tmp_path) == [
        ("acme:0", "acme_[a-z]{8}"),
        ("acme:1", "ACME-[0-9]{4}"),
        ("acme:2", "ZXlK[a-z]+"),
    ]


def test_trufflehog3_rules_keep_the_patterned_ones(secpol: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "trufflehog3" / "static" / "rules.yml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "- id: high-entropy\n  minlen: 20\n  threshold: 4.5\n"
        '- id: acme.key\n  pattern: "acme_[0-9a-f]{32}"\n',
        encoding="utf-8",
    )
    assert secpol.trufflehog3_rules(tmp_path) == [("acme.key", "acme_[0-9a-f]{32}")]


def test_train_repetitive_files_never_share_a_file_with_the_held_out_roots(
    secpol: ModuleType, tmp_path: Path
) -> None:
    held = tmp_path / "held"
    (held / "js").mkdir(parents=True)
    (held / "js" / "same-name.min.js").write_text("var a=1;" * 40, encoding="utf-8")
    (held / "js" / "other.js.map").write_text('{"mappings":"AAAA,CAAC"}' * 20, encoding="utf-8")
    npm = tmp_path / "npm"
    pack = npm / secpol.MINIFIED_NPM[0] / "package" / "dist"
    pack.mkdir(parents=True)
    (pack / "same-name.min.js").write_text("var b=2;" * 40, encoding="utf-8")  # name shared
    (pack / "copy.js.map").write_text('{"mappings":"AAAA,CAAC"}' * 20, encoding="utf-8")  # bytes
    (pack / "kept.min.css").write_text("a{color:red}" * 30, encoding="utf-8")
    site = tmp_path / "site"
    for top, name in [("inspect_evals", "uv.lock"), ("inspect_evals", "run.log"),
                      ("garak", "poetry.lock")]:  # fmt: skip
        (site / top).mkdir(parents=True, exist_ok=True)
        (site / top / name).write_text("[[package]]\nname = 'x'\n" * 20, encoding="utf-8")
    got = list(secpol.repetitive_train(npm, site, [held]))
    assert [(source, text[:12]) for source, text in got] == [
        ("rep-minified-npm", "a{color:red}"),
        ("rep-locks-corpus", "[[package]]\n"),  # inspect_evals' uv.lock: no .log, no garak
    ]
