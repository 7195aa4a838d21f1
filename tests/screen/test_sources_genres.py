"""The genre sources' pure parts: which file of an sdist is its changelog, which catalogues are
its interface translations and how they are drawn per language, and the train-side sources the
intent model's trainer never fits on."""

from __future__ import annotations

import importlib
import io
import random
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from .tarballs import tar_of

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _module(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def genres() -> ModuleType:
    return _module("screen_sources_genres")


def test_the_shallowest_changelog_is_read_and_workflows_are_not(genres: ModuleType) -> None:
    tar = tar_of(
        {
            "proj-1.0/.github/workflows/changelog.yml": b"on: push",
            "proj-1.0/docs/changes.rst": b"see CHANGES.rst",
            "proj-1.0/CHANGES.rst": b"Version 1.0\n-----------\n\n- Add a flag.\n",
            "proj-1.0/src/proj/history.py": b"x = 1",
        }
    )
    assert genres.changelog(tar).startswith("Version 1.0")


def test_an_sdist_without_a_changelog_gives_nothing(genres: ModuleType) -> None:
    assert genres.changelog(tar_of({"proj-1.0/README.md": b"# proj"})) == ""


def test_pieces_are_a_seeded_sample_per_project(
    genres: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(genres, "CHANGELOG_PINS", ("proj==1.0",))
    monkeypatch.setattr(genres, "CORPUS_SDIST", tmp_path)
    data = "".join(f"- Change number {n}.\n" for n in range(400)).encode()
    with tarfile.open(tmp_path / "proj-1.0.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("proj-1.0/NEWS")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    def lines(text: str, _rng: random.Random) -> Iterator[str]:
        yield from text.splitlines()

    first = list(genres.benign_changelogs(lines))
    assert len(first) == genres.PER_PROJECT
    assert {source for source, _ in first} == {"changelogs-a-m"}
    assert first == list(genres.benign_changelogs(lines))


def _catalogue(words: str, count: int) -> bytes:
    entries = (f'msgid "{words} {n}"\nmsgstr "{words} {n}."\n' for n in range(count))
    return "\n".join(entries).encode()


def test_interface_catalogues_are_read_and_fixtures_and_docs_are_not(genres: ModuleType) -> None:
    tar = tar_of(
        {
            "proj-1.0/proj/locale/zh_Hans/LC_MESSAGES/django.po": _catalogue("请输入", 2),
            "proj-1.0/proj/locale/pt_BR/LC_MESSAGES/djangojs.po": _catalogue("Digite", 2),
            "proj-1.0/proj/locale/fr/LC_MESSAGES/django.mo": b"\x95\x04\x12\xde",
            "proj-1.0/proj/translations/ja/LC_MESSAGES/advanced.po": _catalogue("設計", 2),
            "proj-1.0/tests/i18n/locale/xxx/LC_MESSAGES/django.po": _catalogue("fixture", 2),
            "proj-1.0/doc/locale/ko/LC_MESSAGES/admin.po": _catalogue("문서", 2),
        }
    )
    found = sorted((locale, Path(name).name) for locale, name, _ in genres.catalogues(tar))
    assert found == [("pt_BR", "djangojs.po"), ("zh_Hans", "django.po")]
    assert [genres.language(locale) for locale in ("zh_Hant", "pt_BR", "en", "sr_Latn")] == [
        "zh",
        "pt",
        "en",
        "other",
    ]


def test_translations_are_a_seeded_sample_per_language(
    genres: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(genres, "TRANSLATION_PINS", ("proj==1.0",))
    monkeypatch.setattr(genres, "CORPUS_SDIST", tmp_path)
    files = {
        "proj-1.0/proj/locale/fr/LC_MESSAGES/django.po": _catalogue("Veuillez saisir", 200),
        "proj-1.0/proj/locale/ja/LC_MESSAGES/django.po": _catalogue("入力してください", 200),
        "proj-1.0/proj/locale/ko/LC_MESSAGES/django.po": _catalogue("입력하세요", 3),
        "proj-1.0/proj/locale/nl/LC_MESSAGES/django.po": _catalogue("Voer in", 200),
    }
    with tarfile.open(tmp_path / "proj-1.0.tar.gz", "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    def entries(text: str, _rng: random.Random) -> Iterator[str]:
        yield from text.split("\n\n")

    first = list(genres.benign_translations(entries))
    assert {source for source, _ in first} == {"translations-a-m"}
    assert sum("Veuillez" in piece for _, piece in first) == genres.PER_LANGUAGE
    assert sum("してください" in piece for _, piece in first) == genres.PER_LANGUAGE
    assert sum("입력하세요" in piece for _, piece in first) == 3  # all a small language has
    assert sum("Voer in" in piece for _, piece in first) == genres.OTHERS
    assert first == list(genres.benign_translations(entries))


def test_the_trainer_never_fits_on_the_check_only_sources() -> None:
    sources = _module("screen_sources")
    checks = {"api-github", "api-reddit", "changelogs-a-m", "translations-a-m", "chat-corpus"}
    assert checks <= sources.CHECK_ONLY
    assert "api-mastodon" not in sources.CHECK_ONLY  # held out: never read by the trainer at all
    assert all(sources.BENIGN_SOURCES[name][1] == "train" for name in sources.CHECK_ONLY)


def _wheel(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def test_dialogues_are_read_a_turn_a_line_and_other_files_are_not(
    genres: ModuleType, tmp_path: Path
) -> None:
    talk = (
        "categories:\n- greetings\nconversations:\n"
        "- - Hello\n  - Hi, how are you?\n- - Bye\n  - See you\n"
    )
    path = _wheel(
        tmp_path / "chatterbot_corpus-1.3.3-py2.py3-none-any.whl",
        {
            "chatterbot_corpus/data/english/greetings.yml": talk,
            "chatterbot_corpus/data/english/empty.yml": "categories:\n- none\n",
            "chatterbot_corpus/__init__.py": "x = 1",
            "chatterbot_corpus-1.3.3.dist-info/METADATA": "Name: chatterbot-corpus",
        },
    )
    with zipfile.ZipFile(path) as wheel:
        found = list(genres.dialogues(wheel))
    assert found[0][0] == "english"
    assert [text for _, _, text in found] == ["", "Hello\nHi, how are you?\n\nBye\nSee you"]


def test_conversations_are_a_seeded_sample_per_language(
    genres: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(genres, "CORPUS_SDIST", tmp_path)

    def talks(words: str, count: int) -> str:
        rows = "".join(f"- - {words} {n}?\n  - Yes {n}.\n" for n in range(count))
        return "conversations:\n" + rows

    _wheel(
        tmp_path / "chatterbot_corpus-1.3.3-py2.py3-none-any.whl",
        {
            "chatterbot_corpus/data/french/a.yml": talks("Comment vas-tu", 200),
            "chatterbot_corpus/data/korean/a.yml": talks("안녕하세요", 2),
            "chatterbot_corpus/data/dutch/a.yml": talks("Hoe gaat het", 200),
        },
    )

    def entries(text: str, _rng: random.Random) -> Iterator[str]:
        yield from text.split("\n\n")

    first = list(genres.benign_conversations(entries))
    assert {source for source, _ in first} == {"chat-corpus"}
    assert sum("Comment" in piece for _, piece in first) == genres.PER_CHAT_LANGUAGE
    assert sum("안녕하세요" in piece for _, piece in first) == 2  # all a small language has
    assert sum("Hoe gaat" in piece for _, piece in first) == genres.OTHERS
    assert first == list(genres.benign_conversations(entries))
