"""Host names, e-mail addresses and links in one normal form, built on the standards (tier T1).

A host is compared as its ASCII form under UTS #46 processing (non-transitional, STD3 rules) and
IDNA 2008, via the ``idna`` package: ``Docs.Example.COM.`` is ``docs.example.com``, and ``ß``
stays ``ß`` (``straße.de`` is ``xn--strae-oqa.de``, never ``strasse.de`` as IDNA 2003 had it). A
name that ends in a number is read as an IPv4 address (``2130706433`` is ``127.0.0.1``), a
bracketed one as IPv6. Which names are registrable, and which words in free text are links,
comes from the Public Suffix List the ``publicsuffixlist`` package ships (no network at run
time), never from a hand-written table of TLDs. Anything that does not parse has no normal form
(None), which every caller treats as a refusal. A label with ``_`` (not a host name under STD3,
but a DNS name browsers open) is kept as written, lower-cased. Pure; no I/O beyond reading the
packaged list.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Final
from urllib.parse import urlsplit

import idna
from publicsuffixlist import PublicSuffixList

__all__ = [
    "email_address",
    "links",
    "normal_host",
    "public_suffix",
    "registrable_domain",
    "url_host",
]

_LDH: Final = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_LDH_UNDERSCORE: Final = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_NUMERIC_LABEL: Final = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
_IPV4_TEXT: Final = re.compile(r"[0-9a-fx.]+")
_DOTS: Final = ".\u3002\uff0e\uff61"  # the full stops UTS #46 maps to "."
_BANNED: Final = frozenset("\\ \t\r\n\x00")


def _ascii_fast(name: str) -> str | None:
    """The UTS #46 / IDNA 2008 result for a plain LDH name without ``--`` in places 3-4 (the
    common case, checked against ``idna`` by a property test); None to take the full path."""
    host = name.lower()
    labels = host.split(".")
    if len(host) > 253 or not all(_LDH.fullmatch(x) and x[2:4] != "--" for x in labels):
        return None
    return host


def _ipv4(name: str) -> str | None:
    """A name whose last label is a number is an IPv4 address (WHATWG URL), in any of the
    forms the C library reads (``1.2.3.4``, ``0x7f.1``, ``2130706433``); else no host."""
    if not _IPV4_TEXT.fullmatch(name):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(name))
    except OSError:
        return None


@lru_cache(maxsize=8192)
def normal_host(name: str) -> str | None:
    """The host's comparable form (ASCII, lower case, no trailing dot), or None."""
    if not name or len(name) > 1024 or any(ord(ch) < 0x21 or ch == "\x7f" for ch in name):
        return None
    if name.startswith("[") and name.endswith("]"):
        try:
            return ipaddress.IPv6Address(name[1:-1]).compressed
        except ValueError:
            return None
    bare = name[:-1] if name[-1] in _DOTS else name
    if not bare or bare[-1] in _DOTS:
        return None
    last = re.split(f"[{_DOTS}]", bare)[-1]
    if last.isascii() and _NUMERIC_LABEL.fullmatch(last.lower()):
        return _ipv4(bare.lower())
    if bare.isascii():
        fast = _ascii_fast(bare)
        if fast is not None:
            return fast
    if "_" in bare:
        return _with_underscores(re.split(f"[{_DOTS}]", bare))
    return _idna(bare)


def _idna(name: str) -> str | None:
    try:
        host = idna.encode(name, uts46=True, std3_rules=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return None
    return host.lower() or None


def _with_underscores(labels: list[str]) -> str | None:
    """A name with ``_`` in a label (``www.resume_templates.com``, ``_dmarc.example.com``):
    STD3 rules refuse it, but DNS and every browser's URL parser take it, so such an ASCII label
    is kept as written, lower-cased; every other label takes the IDNA path on its own."""
    out: list[str] = []
    for label in labels:
        lowered = label.lower()
        if label.isascii() and "_" in label and _LDH_UNDERSCORE.fullmatch(lowered):
            out.append(lowered)
            continue
        plain = _idna(label)
        if plain is None or "." in plain:
            return None
        out.append(plain)
    host = ".".join(out)
    return host if len(host) <= 253 else None


@cache
def _psl() -> PublicSuffixList:
    return PublicSuffixList(accept_unknown=False)


def public_suffix(host: str) -> str | None:
    """The public suffix of a normal host (``co.uk`` of ``acme.co.uk``), None when its TLD is
    not on the Public Suffix List (or it is an IP address)."""
    if ":" in host or _ipv4(host) == host:
        return None
    return _psl().publicsuffix(host)


def registrable_domain(host: str) -> str | None:
    """The name a registrant holds (``acme.co.uk`` of ``www.acme.co.uk``; ``acme.co`` is a
    different one), per the Public Suffix List with its private section (``alice.github.io``);
    None for a public suffix itself, an unknown TLD or an IP address."""
    if ":" in host or _ipv4(host) == host:
        return None
    return _psl().privatesuffix(host)


def url_host(value: str) -> str | None:
    """The normal host of an ``http``/``https`` URL, or None for anything else — including
    URLs that parsers disagree on (backslashes, whitespace, control characters, credentials
    before the host), so what is checked is what a client would connect to."""
    if any(ch in _BANNED or ord(ch) < 0x20 or ch == "\x7f" for ch in value):
        return None
    try:
        parts = urlsplit(value)
        port = parts.port  # raises on a malformed port
    except ValueError:
        return None
    del port
    if parts.scheme.lower() not in ("http", "https") or "@" in parts.netloc:
        return None
    netloc = parts.netloc.rpartition(":")[0] if parts.port is not None else parts.netloc
    if netloc.endswith(":"):  # "host:" with an empty port
        netloc = netloc[:-1]
    return normal_host(netloc) if netloc else None


def email_address(value: str) -> tuple[str, str] | None:
    """(local part, normal host) of one e-mail address — bare or as ``Name <addr>`` — the
    local part NFKC and lower case, or None for anything that is not exactly one address (a
    display name that itself holds an ``@`` is ambiguous, so it is none)."""
    text = value.strip()
    if text.endswith(">") and text.count("<") == 1:
        name, _, text = text[:-1].partition("<")
        if "@" in name:
            return None
        text = text.strip()
    if any(ch in _BANNED or ord(ch) < 0x20 or ch in '<>,;"()[]:/?#' for ch in text):
        return None
    local, at, domain = text.rpartition("@")
    if not at or not local or "@" in local or not domain or domain[-1] in _DOTS:
        return None
    host = normal_host(domain)
    if host is None or ":" in host:
        return None
    return unicodedata.normalize("NFKC", local).lower(), host


# A link candidate: a run of characters that can appear in a URL written in prose.
_CANDIDATE: Final = re.compile(r"[^\s<>\"'`(){}\[\]|\\^,;!*]+")
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_HOST_END: Final = re.compile(r"[/?#:]")
_DOTTED_QUAD: Final = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_TRAILING: Final = ".,:;!?\u3002\uff0e\uff61"


def links(text: str) -> Iterator[str]:
    """Every link written in free text, as a URL to judge: each ``scheme://…`` (any scheme; a
    non-web one has no host and is refused by the judge) and each bare name that is a host —
    its last label a TLD the Public Suffix List knows (``bit.ly/x``, ``evil.zip``), a
    ``www.`` name, or a dotted-quad IPv4 address (``1.2.3.4/x``). The host after an ``@``
    (``bob@evil.example``) counts too. A name with a known TLD that fails to normalise is
    still yielded, so it is judged (and refused) rather than skipped."""
    for match in _CANDIDATE.finditer(text):
        token = match.group().rstrip(_TRAILING)
        scheme = _SCHEME.search(token)
        if scheme is not None:
            yield token[scheme.start() :]
            continue
        rest = token.rpartition("@")[2]
        name = _HOST_END.split(rest, maxsplit=1)[0].rstrip(_TRAILING)
        if not any(dot in name for dot in _DOTS):
            continue
        if _is_host_name(name):
            yield rest


def _is_host_name(name: str) -> bool:
    if _DOTTED_QUAD.fullmatch(name):
        return True
    if name.lower().startswith("www."):
        return True
    host = normal_host(name)
    if host is not None:
        return public_suffix(host) is not None
    last = re.split(f"[{_DOTS}]", unicodedata.normalize("NFKC", name))[-1]
    label = normal_host(last)
    return label is not None and public_suffix(label) is not None
