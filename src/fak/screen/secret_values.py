"""How a credential-shaped value is judged (tier T1): placeholders and masking, entropy,
character classes, where a token or a quoted value ends, where an assignment's value starts
(past a type annotation), whether a format starts a token.

The helpers ``fak.screen.secrets`` and ``fak.screen.secret_vendors`` validate candidates with.
Pure functions over bytes, each reading a bounded window; no format knowledge lives here (the
formats and their validators are in those two modules).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

__all__ = [
    "TOKEN_CHARS",
    "TYPED",
    "alnum_kinds",
    "annotation",
    "char_classes",
    "clean_start",
    "credential_value",
    "entropy",
    "is_placeholder",
    "random_looking",
    "token_end",
    "value_at",
    "value_start",
]


_PLACEHOLDER_WORDS = (
    b"example", b"xxxx", b"your", b"placeholder", b"dummy", b"sample", b"redacted", b"changeme",
    b"change_me", b"replace", b"insert", b"here", b"fake", b"****", b"...", b"\xe2\x80\xa6",
    b"<", b">", b"${", b"{{", b"%s", b"todo", b"secret_key", b"my-secret", b"mysecret",
    b"password", b"token", b"123456", b"abcdef", b"qwerty",
    # well-known documentation examples: jwt.io's token, Stripe's docs test key, GitHub's docs
    b"sflkxwrjsmekkf2qt4fwpmejf36pok6yjv_adqssw5c", b"4ec39hqlyjwdarjtt1zdp7dc",
    b"16c7e42f292c6912e7710c838347ae178b4a",
)  # fmt: skip


_PLACEHOLDER = re.compile(b"|".join(re.escape(w) for w in _PLACEHOLDER_WORDS))


def is_placeholder(value: bytes) -> bool:
    """Whether a credential-shaped value is a documentation placeholder or a masked value."""
    low = value.lower()
    if _PLACEHOLDER.search(low) is not None:
        return True
    if low.startswith((b"$", b"%", b"@")) or low.endswith(b"_here"):
        return True
    # long runs of one character (masking)
    return _longest_run_at_least_6(low)


_MASK_RUN = re.compile(rb"(.)\1{5}", re.DOTALL)  # six of one byte: masking (linear)


def _longest_run_at_least_6(value: bytes) -> bool:
    return _MASK_RUN.search(value) is not None


def entropy(value: bytes) -> float:
    """Shannon entropy in bits per byte."""
    size = len(value)
    if not size:
        return 0.0
    return -sum(c / size * math.log2(c / size) for c in Counter(value).values())


_LOWER = bytes(range(97, 123))
_UPPER = bytes(range(65, 91))
_DIGIT = bytes(range(48, 58))


def char_classes(value: bytes) -> int:
    """How many of lower / upper / digit / other occur."""
    rest = value.translate(None, _LOWER + _UPPER + _DIGIT)
    return (
        (len(value.translate(None, _LOWER)) != len(value))
        + (len(value.translate(None, _UPPER)) != len(value))
        + (len(value.translate(None, _DIGIT)) != len(value))
        + bool(rest)
    )


def random_looking(value: bytes, *, min_len: int = 12, bits: float = 3.0) -> bool:
    """Long enough, high-entropy, mixing character classes, and not a placeholder."""
    if len(value) < min_len or is_placeholder(value):
        return False
    if char_classes(value) < 2:
        return len(value) >= 32 and entropy(value) >= 3.5  # e.g. long hex keys
    return entropy(value) >= bits


TOKEN_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
BASE64_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def token_end(text: bytes, start: int, chars: frozenset[int], limit: int = 512) -> int:
    """The end of the run of ``chars`` starting at ``start`` (at most ``limit`` bytes)."""
    pattern = _RUNS.get(chars)
    if pattern is None:
        klass = b"".join(re.escape(bytes([c])) for c in sorted(chars))
        pattern = _RUNS[chars] = re.compile(b"[" + klass + b"]*")
    match = pattern.match(text, start, min(len(text), start + limit))
    return match.end() if match else start


_RUNS: dict[frozenset[int], re.Pattern[bytes]] = {}
_VALUE = re.compile(rb"[^ \t\r\n\"'`,;)\]}<>|\\=]*")  # a nested ``key=`` starts a new value


def value_at(text: bytes, start: int, limit: int = 160) -> tuple[int, int]:
    """The [start, end) of an unquoted or quoted value beginning at ``start``."""
    limit_at = start + 8
    while text[start : start + 1] == b"\\" and start < limit_at:  # a quote escaped once or more
        start += 1
    if start < len(text) and text[start] in b"\"'`":
        start += 1
    match = _VALUE.match(text, start, min(len(text), start + limit))
    return start, (match.end() if match else start)


_LITERAL_STOPS = frozenset(b"()[]=")
_NOT_IN_LITERAL = re.compile(rb"[ \t\n\\{}$]|%\(")


def quoted_literal_end(text: bytes, vstart: int, vend: int) -> int | None:
    """Where a quoted value really ends when ``value_at`` stopped inside it at a bracket or
    ``=`` (``SECRET_KEY = 'x8#k(…)=…'``: Django's alphabet has them): the closing quote on the
    same line, within 160 bytes; None when the value is not such a literal, or when the literal
    holds a space, an escape or what reads as a template (``{}``, ``$``, ``%(``): those stay
    refused as before, a Django key holding ``$`` included."""
    if vstart == 0 or text[vend : vend + 1] == b"" or text[vend] not in _LITERAL_STOPS:
        return None
    quote = text[vstart - 1]
    if quote not in b"'\"":
        return None
    close = text.find(bytes([quote]), vend, vstart + 160)
    if close < 0 or not text[vend:close].strip(b"="):
        return None  # (only base64's padding left: the value as read before)
    return None if _NOT_IN_LITERAL.search(text, vstart, close) else close


def alnum_kinds(value: bytes) -> int:
    """How many of lower / upper / digit occur (a word with dashes has one)."""
    size = len(value)
    return (
        (len(value.translate(None, _LOWER)) != size)
        + (len(value.translate(None, _UPPER)) != size)
        + (len(value.translate(None, _DIGIT)) != size)
    )


_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def clean_start(text: bytes, start: int) -> bool:
    """A format starts a token: nothing word-like glued before it, except a string escape
    (``\\n``, ``\\t``, ``\\r``) as in JSON-encoded text."""
    if start == 0 or text[start - 1] not in _WORD:
        return True
    return start >= 2 and text[start - 2] == 0x5C and text[start - 1] in b"nrt"


_HEX = frozenset(b"0123456789abcdefABCDEF")
_UUID = re.compile(rb"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")


def _class_changes(value: bytes) -> float:
    """The share of neighbouring letters and digits of different classes (lower / upper /
    digit; separators dropped): random keys change class at about every other byte (base62
    0.62, hex 0.47), words, names and dotted paths rarely (``UserProfileSettings2024`` 0.18,
    ``cache_audio_write_5m_mtok`` 0.1)."""
    kinds = value.translate(_CLASS_OF, _NOT_ALNUM)
    changes = sum(a != b for a, b in itertools.pairwise(kinds))
    return changes / max(1, len(kinds) - 1)


_CLASS_OF = bytes(
    0x61 if 97 <= c <= 122 else 0x41 if 65 <= c <= 90 else 0x30 if 48 <= c <= 57 else 0x2E
    for c in range(256)
)
_NOT_ALNUM = bytes(c for c in range(256) if not (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122))
# keys their vendors document as public (shipped in web pages and apps): PostHog's project key,
# Stripe's publishable keys, Mapbox's public token, Razorpay's key id, Builder.io's and
# Langfuse's public keys
_PUBLIC_PREFIXES = (
    b"phc_", b"pk_live_", b"pk_test_", b"pk.eyJ", b"rzp_live_", b"rzp_test_", b"bpk-", b"pk-lf-",
)  # fmt: skip


_NAMING_PREFIXES = (
    b"arn:",
    b"urn:",
    b"md5:",
    b"md5-",
    b"sha1:",
    b"sha1-",
    b"sha256",
    b"sha384",
    b"sha512",
)


def credential_value(value: bytes) -> bool:
    """Whether a value says "random credential" on its own, whatever its key is named: 20-200
    characters, no placeholder, no path, URL, ARN, digest, call or variable, not a UUID, not a
    key its vendor documents as public, not letters alone; long hex of one case (32+), or
    letters and digits mixed the way random keys mix them (classes change often, high
    entropy). The test for a value whose name only ends in ``key`` / ``api`` / ``auth`` /
    ``pat`` (``deepgram_key = …``), names code gives ordinary values too."""
    size = len(value)
    if not 20 <= size <= 200 or is_placeholder(value) or value.startswith(_PUBLIC_PREFIXES):
        return False
    if value.lower().startswith(_NAMING_PREFIXES):
        return False  # an ARN / URN names a resource; ``sha256:…`` is a digest
    if value[:1] in b"/.~" or b"://" in value or any(c in value for c in b"([{}$?\\"):
        return False
    if _UUID.fullmatch(value) is not None or alnum_kinds(value) < 2:
        return False
    if len(value.translate(None, _DIGIT)) == size:
        return False  # letters only: a name in camel case (``RuleAzureAccountKeyConfig``)
    if all(c in _HEX for c in value) and (value.islower() or value.isupper()):
        return size >= 32 and entropy(value) >= 3.0  # hex of one case: long
    bits = entropy(value)
    # few digits among lower-case letters change classes rarely: 32+ characters of 4.5 bits
    # (23+ symbols, evenly; words and names stay near 4) say random too
    return (_class_changes(value) >= 0.3 and bits >= 3.6) or (size >= 32 and bits >= 4.5)


# --- where an assignment's value starts: type annotations -----------------------------------

_TYPE = (
    rb"[A-Za-z_][A-Za-z0-9_.]{0,40}(?:\[[^\]\n]{0,60}\]|<[^>\n]{0,60}>)?"
    rb"(?:[ \t]*\|[ \t]*[A-Za-z_][A-Za-z0-9_.]{0,40}(?:\[[^\]\n]{0,60}\])?){0,3}"
)
"""A type annotation (``str``, ``Optional[str]``, ``str | None``, TypeScript's ``string``,
``Record<string, string>``): in ``api_key: str = "…"`` the value follows its ``=``, and in
``client_secret: ClientSecretCredential = build()`` the type's name is not a value."""
TYPED = b"(?:[ \t]*" + _TYPE + b"[ \t]+=)?"
"""After an assignment's ``:``, an optional annotation and its ``=`` (spaced, as PEP 8 and
TypeScript write it: base64's ``=`` padding never has a space before it)."""


_ANNOTATED = re.compile(rb"[ \t]*" + _TYPE + rb"[ \t]+=[ \t]*")


def value_start(text: bytes, key_end: int) -> int:
    """Where the value starts after an assignment's operator (``key_end``: past it and its
    spaces), past a type annotation and its ``=`` when the operator is ``:`` (``api_key: str =
    "…"``, TypeScript's ``apiKey: string = "…"``)."""
    if not _after_colon(text, key_end):
        return key_end
    typed = _ANNOTATED.match(text, key_end)
    return key_end if typed is None else typed.end()


def _after_colon(text: bytes, key_end: int) -> bool:
    """Whether the operator that ends before ``key_end`` (and its spaces) is ``:``."""
    at = key_end
    while at > 0 and text[at - 1] in b" \t":
        at -= 1
    return text[at - 1 : at] == b":"


_TYPE_WORDS = re.compile(rb"[A-Z][a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def _type_name(value: bytes) -> bool:
    """A class's name: capitalised words, acronyms and numbers (``GoogleCredentials``,
    ``AsyncAPIKeys``, ``Ed25519PrivateKey``), a word last. Random characters
    (``Kx9vQ2mZ7pLw``) almost never split so, and a person's ``Summer2024`` ends in its digits.
    (Split by one pass of non-nested alternatives: no backtracking blow-up on long values.)"""
    if not value[:1].isupper() or not value[-1:].isalpha() or value.upper() == value:
        return False  # capitals and digits alone: base32 (``JBSWY3DPEHPK3PXP``), not a class
    words = _TYPE_WORDS.findall(value)
    if sum(map(len, words)) != len(value):
        return False  # a lower-case letter no capital opens
    return all(len(w) > 1 or w.isdigit() for w in words)


_AFTER_TYPE = frozenset(b",)|]")


def annotation(text: bytes, key_end: int, vstart: int, vend: int) -> bool:
    """``credentials: GoogleCredentials | None``, ``(self, api_keys: AsyncAPIKeys)``: after a
    ``:``, an unquoted class name that a union bar, a comma or a closing bracket follows is a
    parameter's or attribute's type (Python, TypeScript), not its value."""
    if vstart != key_end or value_start(text, key_end) != key_end:
        return False  # quoted, or already past an annotation and its ``=``
    if not _after_colon(text, key_end) or not _type_name(text[vstart:vend]):
        return False
    after = text[vend : vend + 64].lstrip(b" \t")[:1]
    return after != b"" and after[0] in _AFTER_TYPE
