"""``fak.policy.lookup``: the indexed lookups answer exactly what a scan of every occurrence
answers (the scans below are the pre-index implementation, kept here as the oracle)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from fak.abi import Context
from fak.policy import lookup
from fak.policy.lookup import MARK, SEP, TextIndex, _emails, _hosts, normal_text
from fak.policy.origins import ProvenanceIndex


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _scan_text(haystack: str, needle: str, inside: Callable[[str], bool] = _word) -> bool:
    """Every occurrence of ``needle``, checked for a word boundary at each end that needs one."""
    start = haystack.find(needle)
    check_left, check_right = inside(needle[0]), inside(needle[-1])
    while start != -1:
        end = start + len(needle)
        left_ok = not check_left or start == 0 or not inside(haystack[start - 1])
        right_ok = not check_right or end == len(haystack) or not inside(haystack[end])
        if left_ok and right_ok:
            return True
        start = haystack.find(needle, start + 1)
    return False


def _scan_runs(text: str, needle: str) -> bool:
    runs = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).upper())
    joined = "".join(runs)
    starts, ends, at = set(), set(), 0
    for run in runs:
        starts.add(at)
        at += len(run)
        ends.add(at)
    start = joined.find(needle)
    while start != -1:
        if start in starts and start + len(needle) in ends:
            return True
        start = joined.find(needle, start + 1)
    return False


_ALPHABET = st.sampled_from(list("ab AB-._,1 2ß\u00e9\u0301\t\x00\x01"))
_TEXT = st.text(alphabet=_ALPHABET, max_size=30)


def _first(pieces: list[str], found: Callable[[str], bool]) -> int | None:
    return next((i for i, piece in enumerate(pieces) if found(piece)), None)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_TEXT, max_size=4), needle=_TEXT, pick=st.integers(0, 30))
def test_text_lookup_equals_the_scan(pieces: list[str], needle: str, pick: int) -> None:
    if pieces and pick % 2:  # half the time, ask for a piece of the text itself
        source = normal_text(pieces[pick % len(pieces)])
        needle = source[pick % (len(source) + 1) :][: 1 + pick % 7]
    form = normal_text(needle)
    if not form or SEP in form or MARK in form:
        return
    want = _first(pieces, lambda piece: _scan_text(normal_text(piece), form))
    assert TextIndex(pieces).text(form) == want
    few = lookup._FEW
    lookup._FEW = 0  # the marked text, which a lookup takes past _FEW near misses
    try:
        assert TextIndex(pieces).text(form) == want
    finally:
        lookup._FEW = few


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_TEXT, max_size=4), needle=_TEXT, pick=st.integers(0, 30))
def test_run_lookup_equals_the_scan(pieces: list[str], needle: str, pick: int) -> None:
    if pieces and pick % 2:
        source = "".join(re.findall(r"[^\W_]+", pieces[pick % len(pieces)].upper()))
        needle = source[pick % (len(source) + 1) :][: 1 + pick % 9]
    form = re.sub(r"[\s\-]+", "", unicodedata.normalize("NFKC", needle)).upper()
    if not form.isalnum():
        return
    want = _first(pieces, lambda piece: _scan_runs(piece, form))
    assert TextIndex(pieces).run(form) == want


def test_a_value_never_matches_across_two_pieces() -> None:
    index = TextIndex(["pay DE89", "3704 now", "bob", "smith"])
    assert index.run("DE893704") is None
    assert index.run("3704") == 1
    assert index.text("bob smith") is None
    assert index.text("smith") == 3


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_ascii_host_and_address_tokens_take_the_fast_path_to_the_same_answer(text: str) -> None:
    marker = " ü.example büb@ü.example"  # not ASCII: forces the pattern path
    extra_hosts = _hosts(marker)
    extra_mail = _emails(marker)
    assert _hosts(text) == _hosts(text + marker) - extra_hosts
    assert _emails(text) == _emails(text + marker) - extra_mail


_KINDED = st.sampled_from(
    [("text", "bob"), ("text", "b-b"), ("iban", "AB12"), ("host", "a.example"), ("number", "12")]
)
_PIECE = st.tuples(
    st.sampled_from(["user", "read_file", "get_iban"]),
    st.text(alphabet=st.sampled_from(list("bo -ab12AB.example@x ")), max_size=20),
)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(_PIECE, max_size=12), cut=st.integers(0, 12), probe=_KINDED)
def test_an_index_extended_piece_by_piece_answers_as_one_built_at_once(
    pieces: list[tuple[str, str]], cut: int, probe: tuple[str, str]
) -> None:
    ctx = Context()
    for i, (who, text) in enumerate(pieces):
        if who == "user":
            ctx.user(text)
        else:
            ctx.result(who, f"c{i}", text)
    whole = ctx.pieces
    tools = frozenset({"get_iban"})
    at_once = ProvenanceIndex(ctx, pinned=["AB12"], trusted_tools=tools)
    grown = ProvenanceIndex(None, pinned=["AB12"], trusted_tools=tools)
    grown = grown.extended(whole[:cut])
    for piece in whole[cut:]:
        grown = grown.extended([piece])
    assert grown.origin(*probe) == at_once.origin(*probe)
    assert grown.untrusted_names == at_once.untrusted_names


def test_addresses_and_hosts_written_in_full_width_are_found() -> None:
    index = TextIndex(["write to ｂｏｂ＠ｅｘａｍｐｌｅ．ｃｏｍ or visit ｅｘａｍｐｌｅ．ｏｒｇ"])
    assert index.email("bob@example.com") == 0
    assert index.host("example.org") == 0
