"""HTML character references and URL percent-escapes that spell words (tier T1).

A page or a URL can write an order in escapes that a reader, and a model, reads straight
through: ``Ign&#111;re all previous instructions``, ``&#x49;gnore …``, ``%49gnore …``, or words
joined by escaped spaces, ``Ignore%20all%20previous%20instructions``,
``Ignore&nbsp;all&nbsp;previous&nbsp;instructions``. The cues are written for the characters,
so when a view holds such a spelling (``SPELLS``), ``spelled_out`` gives the whole view with its
escapes decoded, and the de-obfuscating screen reads it as one more decoded layer. What
ordinary text escapes (``&amp;``, ``&lt;``, ``&quot;``, ``&#39;``, a URL's ``my%20file.pdf``)
spells no word this way, so ordinary pages and API replies get no second view. Pure; no logging.
"""

from __future__ import annotations

import html
from urllib.parse import unquote_to_bytes

__all__ = ["JOINED_WORDS", "SPELLS", "may_spell", "spelled_out"]

JOINED_WORDS = 4
"""Words in a row joined by escaped spaces before a view is read unescaped."""
_ROUNDS = 3
"""Escapes of escapes (``&amp;#105;``, ``%2549``) are decoded this many rounds deep at most."""

# an escape for an ASCII letter or digit: &#65;-&#90;, &#97;-&#122;, &#48;-&#57; (leading
# zeros allowed), their &#x..; forms, and %41-%5A, %61-%7A, %30-%39; each also escaped once or
# twice more (&amp;#105;, %2549)
_AMP = rb"&(?:amp;){0,2}"
_PCT = rb"%(?:25){0,2}"
_DIGIT_OR_LETTER = (
    rb"%s#0*(?:4[89]|5[0-7]|6[5-9]|[7-8][0-9]|9[07-9]|1[01][0-9]|12[0-2]);" % _AMP
    + rb"|%s#[xX]0*(?:3[0-9]|4[1-9A-Fa-f]|5[0-9Aa]|6[1-9A-Fa-f]|7[0-9Aa]);" % _AMP
    + rb"|%s(?:3[0-9]|4[1-9A-Fa-f]|5[0-9Aa]|6[1-9A-Fa-f]|7[0-9Aa])" % _PCT
)
_SPACE = rb"(?:%snbsp;|%s#0*(?:32|160);|%s#[xX]0*(?:20|[aA]0);|%s20)" % (_AMP, _AMP, _AMP, _PCT)
# JOINED_WORDS words joined by escaped spaces: a letter, the whole words between escaped spaces,
# then a letter (one letter at each end keeps the automaton small)
_JOINED = rb"[A-Za-z]" + (_SPACE + rb"[A-Za-z]+") * (JOINED_WORDS - 2) + _SPACE + rb"[A-Za-z]"
SPELLS = rb"(?:%s)|%s" % (_DIGIT_OR_LETTER, _JOINED)
"""RE2 source (Latin-1) that matches where an escape stands for a letter or a digit, or where
escaped spaces join ``JOINED_WORDS`` words: the views ``spelled_out`` decodes. The de-obfuscating
screen adds it to its union pass, so a view's other scans find it at no extra pass."""
_LEADS = ((b"&", (b"#", b"nbsp;", b"amp;")), (b"%", (b"2", b"3", b"4", b"5", b"6", b"7")))
"""What follows an ``&`` or a ``%`` in every escape ``SPELLS`` reads."""


def may_spell(view: bytes) -> bool:
    """A necessary condition for ``SPELLS`` to match in ``view``: every escape it reads starts
    with ``&#``, ``&nbsp;`` or ``&amp;``, or is a ``%`` followed by one of 2-7. Each ``&`` and
    ``%`` is found by ``memchr`` and looked at where it stands; past 64 of them the full check
    decides (a multi-byte ``in`` would walk the view byte by byte)."""
    looked = 0
    for mark, leads in _LEADS:
        at = view.find(mark)
        while at >= 0:
            looked += 1
            if looked > 64 or view.startswith(leads, at + 1):
                return True
            at = view.find(mark, at + 1)
    return False


def _decoded(text: bytes) -> bytes:
    """``text`` with its percent-escapes and HTML character references decoded, round after
    round until nothing changes (at most ``_ROUNDS``)."""
    for _ in range(_ROUNDS):
        step = unquote_to_bytes(text) if b"%" in text else text
        if b"&" in step:
            step = html.unescape(step.decode("utf-8", "surrogateescape")).encode(
                "utf-8", "surrogateescape"
            )
        if step == text:
            break
        text = step
    return text


def spelled_out(view: bytes) -> bytes | None:
    """``view`` with its escapes decoded (for a view ``SPELLS`` matches in); None when that
    changes nothing."""
    decoded = _decoded(view)
    return None if decoded == view else decoded
