"""Passwords written beside their user (tier T1): login pairs and the shapes that carry them.

Oracle's ``jdbc:oracle:thin:user/password@``, a .netrc entry, SQL's ``IDENTIFIED BY '…'``, a
``--password`` / ``--token`` option, curl's ``-u user:password`` on a curl command line,
npm's base64 ``user:password``; and the line shapes of everyday tools: PHP's
``define('DB_PASSWORD', '…')``, a .pgpass line, Redis's ``requirepass``, a MySQL client's
``-p<password>``, ``sshpass -p``, a session cookie in a ``Cookie`` header. ``fak.screen.secrets``
finds where such a shape starts and asks here for the password's span. Pure; spans only, never
the bytes.
"""

from __future__ import annotations

import base64
import binascii
import re

from fak.screen.secret_values import alnum_kinds as _alnum_kinds
from fak.screen.secret_values import char_classes as _classes
from fak.screen.secret_values import is_placeholder
from fak.screen.secret_values import random_looking as _random_looking
from fak.screen.secret_values import token_end as _token_end
from fak.screen.secret_values import value_at as _value_at

__all__ = ["base64_pair", "login_pair", "password_ok"]


def password_ok(password: bytes) -> bool:
    """A password written beside its user (a URL, a login pair): no placeholder, at least six
    characters of two classes (``user:@host``, ``${PASSWORD}``, ``<password>``, ``****`` fail)."""
    return not is_placeholder(password) and len(password) >= 6 and _classes(password) >= 2


def base64_pair(value: bytes) -> bytes | None:
    """The password of a base64 ``user:password`` (npm's ``_auth``), or None."""
    try:
        raw = base64.b64decode(value + b"=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, colon, password = raw.partition(b":")
    if not colon or not user or not all(32 < c < 127 for c in raw):
        return None
    return password


_CURL_OPTION = re.compile(rb"\s(?:-u|--user|-U|--proxy-user)(?:[ \t]+|=)[\"']?")
_CURL = re.compile(rb"(?:^|[^\w.-])curl(?:\.exe)?[ \t]")  # at ``curl`` or one byte before
_PASSWORD_CHARS = frozenset(range(33, 127)) - frozenset(b"\"'`")


# passwords of documentation and vendor defaults, refused whole by the shapes below (``-p
# P@ssw0rd``, vSphere's ``VMware1!``; connection strings holding them were held before and are)
_DOC_PASSWORDS = frozenset(
    {b"p@ssw0rd", b"passw0rd", b"p@ssword", b"s3cret", b"s3cr3t", b"vmware1!"}
)


def login_pair(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The password of Oracle's ``jdbc:oracle:thin:user/password@``, of a .netrc entry, of
    SQL's ``IDENTIFIED BY '…'``, of a ``--password`` option, or of curl's ``-u user:password``
    (on a curl command line, continued lines included; ``-u token:``, an API key as the user and
    no password, is judged as a token)."""
    span = _login_span(text, start, end)
    if span is None or text[span[0] : span[1]].lower() in _DOC_PASSWORDS:
        return None
    return span


def _login_span(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The secret's span for each login shape: the line shapes by their own patterns, the
    others told apart by the match's first byte."""
    for shape, read in _LINE_SHAPES:
        if shape.match(text, start) is not None:
            return read(text, start, end)
    first = text[start]
    if first == 0x6A:  # ``jdbc:oracle:thin:``
        slash = text.index(b"/", start + 17)
        return (slash + 1, end - 1) if password_ok(text[slash + 1 : end - 1]) else None
    if first in b"Mm\\":  # .netrc's ``password``: up to a space or a JSON escape
        vstart, vend = end, _token_end(text, end, _PASSWORD_CHARS - {0x5C}, limit=128)
        return (vstart, vend) if password_ok(text[vstart:vend]) else None
    if first not in b" \t\r\n\x0b\x0c":  # SQL's ``BY '``, PHP's ``define('…', '``: from the quote
        vstart, vend = _value_at(text, end - 1)
        return (vstart, vend) if password_ok(text[vstart:vend]) else None
    if text[end - 1] != 0x3A:  # ``--password <value>``, ``--token <value>``
        vstart, vend = _value_at(text, end)
        value = text[vstart:vend]
        if not value[:1].isalnum() or any(c in value for c in b"([{}$") or _alnum_kinds(value) < 2:
            return None  # a flag, punctuation, a variable or a call
        if b"passw" not in text[start:end].lower():  # ``--token``, ``--api-key``: a token
            return (vstart, vend) if _random_looking(value, min_len=16) else None
        return (vstart, vend) if password_ok(value) else None
    if not _on_curl_line(text, start):
        return None
    option = _CURL_OPTION.match(text, start)
    colon = end - 1
    user = text[option.end() if option else colon : colon]
    stop = _token_end(text, end, _PASSWORD_CHARS, limit=128)
    while stop > end and text[stop - 1] == 0x5C:  # ``\\"`` closing a JSON-encoded quote
        stop -= 1
    password = text[end:stop]
    if not password:
        return (colon - len(user), colon) if _random_looking(user, min_len=16) else None
    if _alnum_kinds(password) < 2 or not password_ok(password):
        return None  # ``docker -u www-data:www-data``-like pairs are names, not passwords
    return end, stop


def _on_curl_line(text: bytes, at: int) -> bool:
    """Whether the command line holding ``at`` (back to 1 KiB, through ``\\`` continuations)
    runs curl."""
    low = max(0, at - 1024)
    line = text.rfind(b"\n", low, at)
    while line > low and text[line - 2 : line].rstrip(b"\r").endswith(b"\\"):
        line = text.rfind(b"\n", low, line - 1)
    found = text.rfind(b"curl", max(line, low), at)
    while found >= 0 and _CURL.match(text, found - (found > 0)) is None:
        found = text.rfind(b"curl", max(line, low), found)
    return found >= 0


def _pgpass(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The last field of ``host:port:database:user:password``, when it ends the line."""
    vstart = end - 1
    vend = _token_end(text, vstart, _PASSWORD_CHARS - {0x3A}, limit=128)
    if text[vend : vend + 1] not in (b"", b"\n", b"\r"):
        return None
    return (vstart, vend) if password_ok(text[vstart:vend]) else None


def _after_option(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The value right after the match (``requirepass <value>``, ``sshpass -p <value>``)."""
    vstart, vend = _value_at(text, end - 1)
    value = text[vstart:vend]
    if any(c in value for c in b"([{}$") or not password_ok(value):
        return None
    return vstart, vend


_MYSQL_P = re.compile(rb"[ \t]-p([^\s'\"]{1,128})")


def _mysql(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """A MySQL client's ``-p<password>`` (written with no space), the first on its line."""
    line_end = text.find(b"\n", start)
    found = _MYSQL_P.search(text, start, len(text) if line_end < 0 else line_end)
    if found is None or not password_ok(found.group(1)) or found.group(1)[:1] == b"-":
        return None
    return found.span(1)


_COOKIE_PAIR = re.compile(rb"([A-Za-z0-9_.-]{1,64})=([A-Za-z0-9_.~+/%=-]{16,4096})")
_SESSION_NAME = re.compile(rb"(?i)sess|sid|token|auth|jwt|login|remember")


def _cookie(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """A session cookie's value in a ``Cookie`` / ``Set-Cookie`` header (a line, or a JSON
    member): a cookie named for a session, a token or a login, its value random-looking."""
    stop = len(text)
    for mark in (b"\n", b'"', b"\\"):
        found = text.find(mark, end + 2, stop)
        stop = stop if found < 0 else found
    for pair in _COOKIE_PAIR.finditer(text, end, min(stop, end + 8192)):
        name, value = pair.group(1), pair.group(2)
        if _SESSION_NAME.search(name) and _random_looking(value.rstrip(b"="), min_len=16):
            return pair.span(2)
    return None


_LINE_SHAPES = (
    (re.compile(rb"[A-Za-z0-9.*_-]+:(?:[0-9]{2,5}|\*):"), _pgpass),
    (re.compile(rb"[ \t]*(?:requirepass|masterauth)[ \t]"), _after_option),
    (re.compile(rb"sshpass[ \t]"), _after_option),
    (re.compile(rb"mysql"), _mysql),
    (re.compile(rb"(?i)(?:set-)?cookie"), _cookie),
)
"""The shapes that ``_login_span`` tells apart by pattern, not by their first byte."""
