"""Who may talk to the gateway from where (tier T3): the Host allow-list and CORS.

DNS rebinding points a hostile name at 127.0.0.1, so a browser page on that name can reach a
loopback gateway as "same origin"; the one thing it cannot forge is the ``Host`` header, which
carries the hostile name. ``HostCheck`` admits loopback names (or a configured list) on every
route. ``Cors`` answers preflights only for configured origins and marks their responses;
with none configured, no cross-origin page can read a response or send a JSON body.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Final

__all__ = ["LOOPBACK_NAMES", "Cors", "HostCheck", "host_name"]

LOOPBACK_NAMES: Final = ("localhost",)


def host_name(header: str) -> str:
    """``Host`` without its port, lower-cased; IPv6 brackets removed."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def _is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostCheck:
    """``allowed(None)`` loopback only; an explicit list adds names (``*`` admits any)."""

    __slots__ = ("_any", "_names", "_seen")

    def __init__(self, names: Iterable[str] | None = None) -> None:
        listed = {host_name(n) for n in (names or ()) if n.strip()}
        self._any = "*" in listed
        self._names = frozenset(listed - {"*"})
        self._seen: dict[str, bool] = {}  # header -> verdict, for the few Host values in use

    def allowed(self, header: str | None) -> bool:
        if self._any:
            return True
        if not header:
            return False
        known = self._seen.get(header)
        if known is not None:
            return known
        name = host_name(header)
        verdict = name in self._names or _is_loopback(name)
        if len(self._seen) < 256:
            self._seen[header] = verdict
        return verdict

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._names))


class Cors:
    """Configured origins (``scheme://host[:port]``) only; never a wildcard with credentials."""

    __slots__ = ("_origins",)

    def __init__(self, origins: Iterable[str] = ()) -> None:
        self._origins = frozenset(o.strip().rstrip("/") for o in origins if o.strip())

    def allows(self, origin: str | None) -> bool:
        return origin is not None and origin.rstrip("/") in self._origins

    @staticmethod
    def preflight_headers(requested: str | None) -> list[tuple[bytes, bytes]]:
        """What a preflight answer adds to ``response_headers``."""
        headers = [
            (b"access-control-allow-methods", b"GET, POST"),
            (b"access-control-max-age", b"600"),
        ]
        if requested:
            headers.append((b"access-control-allow-headers", requested.encode("latin-1")))
        return headers

    @staticmethod
    def response_headers(origin: str) -> list[tuple[bytes, bytes]]:
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", b"X-Trace-Id"),
            (b"vary", b"Origin"),
        ]
