"""Vendor-token validators (tier T1): the ``vendor_token`` candidates of ``fak.screen.secrets``.

A vendor prefix (whispers' list, ``fak.screen.secret_prefixes``) and the token behind it, a token
before Terraform Cloud's / FCM's marker, a Mailchimp key before its data centre, a webhook URL,
Azure's identifiable keys (a service signature at a fixed offset) and Discord bot tokens (a user
id in base64). Each is judged on its own random part. Pure; reads a bounded window around the
candidate.
"""

from __future__ import annotations

import base64
import binascii
import re

from fak.screen.secret_prefixes import PREFIXED, PREFIXED_ANY, PREFIXED_AT
from fak.screen.secret_values import (
    TOKEN_CHARS,
    alnum_kinds,
    clean_start,
    is_placeholder,
    random_looking,
    token_end,
)

__all__ = ["vendor_token"]


_VENDOR_PREFIX = re.compile(
    rb"(?:CFPAT|CLOJARS|dp\.[a-z]+\.|dt0c01\.|EAACEdEose0cBA|FLWSECK(?:_TEST)?|fio-u-|glsa_|glc_"
    rb"|eyJrIjoi|lin_[a-z]+_|NR[A-Z]{2}|PMAK|whsec_|amzn\.mws\.|sk\.eyj1ijoi|akab)[-_]?",
    re.IGNORECASE,
)
_LOWER_DIGITS = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyz")  # Mailchimp's keys: hex
_VENDOR_CHARS = TOKEN_CHARS | frozenset(b".=+/")
_ALNUM = TOKEN_CHARS - frozenset(b"_-")
_NAME = re.compile(rb"[A-Z_]{3,}|[a-z_]{3,}")  # a setting's name in one case


def vendor_token(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """A vendor-prefixed token, a token before Terraform Cloud's / FCM's marker, or a webhook
    URL whose last part is random-looking."""
    if text[start] in b".:":  # ``<random>.atlasv1.<random>``, ``<id>:APA91b<random>``
        head = start
        while head > max(0, start - 64) and text[head - 1] in TOKEN_CHARS:
            head -= 1
        stop = token_end(text, end, TOKEN_CHARS | frozenset(b"=."))
        if start - head < 4 or is_placeholder(text[head:stop]):
            return None
        return (head, stop) if random_looking(text[end - 12 : stop], bits=3.0) else None
    marker = _IDENTIFIABLE_AT.match(text, start)
    if marker is not None:  # an Azure identifiable key: its signature at a fixed offset
        return _identifiable(text, start, marker.end(), _IDENTIFIABLE[marker.group()])
    if text[start] == 0x2D:  # ``<32 hex>-us<digits>``: a Mailchimp key, read back (scanners
        # accept any lower-case letter)
        head = start - 32
        if head < 0 or not clean_start(text, head):
            return None
        key = text[head:start]
        if not all(c in _LOWER_DIGITS for c in key) or not random_looking(key, min_len=32):
            return None
        return head, end
    if text[start] == 0x5C:  # ``\\n`` before the prefix: a JSON-encoded line
        start += 2
    least, alnum = 0, False  # a prefix of ``secret_prefixes``: its numbers
    prefix = _VENDOR_PREFIX.match(text, start)
    named = None  # which entry: asked only where one starts (the test is ~20x cheaper)
    if prefix is None and PREFIXED_ANY.match(text, start) is not None:
        named = PREFIXED_AT.match(text, start)
    if named is not None:
        prefix = named
        _, least, alnum = PREFIXED[(named.lastindex or 1) - 1]
    if prefix is None and (discord := _DISCORD.match(text, start)) is not None:
        return _discord_token(text, start, discord)
    if prefix is None:  # a webhook URL
        stop = token_end(text, start, TOKEN_CHARS | frozenset(b"./@"))
        tail = text[start:stop].rstrip(b"/").rsplit(b"/", 1)[-1]
        return (start, stop) if random_looking(tail, min_len=6, bits=2.5) else None
    if not clean_start(text, start):
        return None
    # from the prefix's end: a prefix may hold ``:`` ``~`` ``!`` ``$`` (``AstraCS:``, ``sha256~``)
    stop = token_end(text, prefix.end(), _VENDOR_CHARS)
    if text.startswith(b"access_token$", start):  # Braintree: ``$production$<id>$<hex>``
        for _ in range(3):
            if text[stop : stop + 1] == b"$":
                stop = token_end(text, stop + 1, _VENDOR_CHARS)
    while stop > start and text[stop - 1] in b"./+":  # a sentence's full stop, a path's slash
        stop -= 1
    body = text[prefix.end() : stop]
    if alnum_kinds(body) < 2 or is_placeholder(body):  # ``access_token$`` holds "token"
        return None
    if least and start > 0 and text[start - 1] in b"+/":
        return None  # a chance match in a base64 run (a token may end in ``+``: not the end)
    if len(body) < max(least, 12) or (alnum and not body.isalnum()):
        return None  # too short, or ``rnd_seed_value``: a name that shares a prefix
    if b"=" in body and _NAME.fullmatch(body.split(b"=", 1)[0]):
        return None  # ``CLOJARS_USERNAME=alice``: the prefix began a setting's name
    return (start, stop) if random_looking(body, min_len=12, bits=3.0) else None


# a Discord bot token: the bot's user id in base64 (17-20 digits: 23-27 characters, ``M``,
# ``N`` or ``O`` first), a timestamp, an HMAC (27 characters; 38 in newer tokens)
_DISCORD = re.compile(rb"([MNO][DTjz][A-Za-z0-9_-]{21,25})\.[A-Za-z0-9_-]{6}\.([A-Za-z0-9_-]{27,})")


def _discord_token(text: bytes, start: int, match: re.Match[bytes]) -> tuple[int, int] | None:
    """The token when its first part decodes to a user id (digits only) and its HMAC is
    random-looking (look-alikes with a random first part fail the first test)."""
    head, hmac = match.group(1), match.group(2)
    if not clean_start(text, start) or len(hmac) > 40:
        return None
    try:
        user_id = base64.urlsafe_b64decode(head + b"=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return None
    if not (user_id.isdigit() and 17 <= len(user_id) <= 20 and user_id[:1] != b"0"):
        return None
    return (start, match.end()) if random_looking(hmac, min_len=27, bits=3.5) else None


# signature -> characters before it, key lengths, alphabet (Microsoft's
# security-utilities patterns; DevOps PATs and CASK keys with ``JQQJ`` at 52)
_B64 = _ALNUM | frozenset(b"+/")
_URLSAFE = _ALNUM | frozenset(b"_-")
_IDENTIFIABLE: dict[bytes, tuple[tuple[int, ...], tuple[int, int], frozenset[int]]] = {
    **{m: ((33,), (44, 44), _B64) for m in (b"+ARm", b"+AEh", b"+ASb", b"AIoT", b"AzCa", b"AZEG")},
    b"AzSe": ((42,), (52, 52), _ALNUM),
    b"+ACR": ((42,), (52, 52), _B64),
    b"AzFu": ((44,), (56, 56), _URLSAFE),
    **{m: ((76,), (88, 88), _B64) for m in (b"+ASt", b"+ABa", b"+AMC", b"ACDb", b"APIM")},
    b"JQQJ": ((52, 53), (84, 88), _ALNUM),
    **{m: ((3,), (37, 40), _URLSAFE | frozenset(b".~")) for m in (b"8Q~", b"7Q~")},
}
_IDENTIFIABLE_AT = re.compile(
    rb"JQQJ|\+A(?:Rm|Eh|Sb|St|Ba|MC|CR)|AIoT|AzCa|AZEG|AzSe|AzFu|ACDb|APIM|[78]Q~"
)


def _identifiable(
    text: bytes,
    start: int,
    after: int,
    shape: tuple[tuple[int, ...], tuple[int, int], frozenset[int]],
) -> tuple[int, int] | None:
    """The key around a signature at ``start`` when the signature sits at its offset and the key
    has its length: a run of the key's alphabet (then ``=`` padding) of exactly that shape."""
    befores, (least, most), chars = shape
    for before in befores:  # the key's first character: ``before`` back, the run all key bytes
        head = start - before
        if head < 0 or token_end(text, head, chars, limit=before) != start:
            continue
        if head == 0 or text[head - 1] not in chars or text[head - 2 : head - 1] == b"\\":
            break  # nothing of the key's alphabet glued before it (a ``\\n`` escape may be)
    else:
        return None  # the signature is not at its offset (or the run goes on: not a key)
    stop = token_end(text, start, chars, limit=most)
    while stop < len(text) and stop - head < most and text[stop] == 0x3D:  # ``=`` padding
        stop += 1
    if not least <= stop - head <= most or (stop < len(text) and text[stop] in chars):
        return None
    # the random part: before the signature (CASK keys carry zero-padded fields after it), or
    # after it for Entra ID's three-character head
    part = text[head:start] if start - head >= stop - after else text[after:stop]
    return (head, stop) if random_looking(part.rstrip(b"="), bits=3.5) else None
