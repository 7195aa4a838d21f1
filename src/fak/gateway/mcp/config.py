"""The MCP proxy's configuration: the ``mcpServers`` file Claude Code and Cursor use (tier T3).

``load_proxy_config(text)`` parses ``{"mcpServers": {name: {command, args, env, cwd} | {url,
headers}}, "fak": {...}}`` strictly into frozen values: an unknown key, a bad server name or a
server with neither ``command`` nor ``url`` is a ``ProxyConfigError`` with a stable code and a
message naming the field to fix. ``${VAR}`` in strings is expanded from the environ the caller
passes (library code never reads the process environment). Keys other clients keep in the same
block (``type``, ``disabled``, ``timeout``, ``autoApprove``...) are accepted; ``disabled`` servers
are skipped. No I/O beyond reading the named file.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from fak.wire.strictjson import DuplicateKey, InvalidJson, loads_strict

__all__ = [
    "DEFAULT_SEPARATOR",
    "OnChange",
    "ProxyConfig",
    "ProxyConfigError",
    "ServerSpec",
    "load_proxy_config",
    "load_proxy_config_file",
    "single_server_config",
]

DEFAULT_SEPARATOR: Final = "__"
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_VAR: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
_SERVER_KEYS: Final = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "type",
        "allow_sampling",
        "allow_elicitation",
        "tool_digests",
    }
)
# keys other clients keep in an mcpServers entry; accepted and ignored (``disabled`` skips it)
_FOREIGN_KEYS: Final = frozenset(
    {"disabled", "timeout", "autoApprove", "alwaysAllow", "description", "enabled", "trust"}
)
_FAK_KEYS: Final = frozenset({"separator", "on_schema_change", "images"})


class OnChange(enum.StrEnum):
    """What a changed tool definition (a rug pull) does to an allowed tool."""

    HOLD = "hold"  # hidden and refused until tool_digests pins the new digest
    ADMIT_AND_LOG = "admit_and_log"  # listed again, the change journaled


class ProxyConfigError(ValueError):
    """A config file fak cannot use; ``code`` is stable, the message says what to fix."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One downstream MCP server: a stdio command or a Streamable HTTP url."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    allow_sampling: bool = False
    allow_elicitation: bool = False
    tool_digests: Mapping[str, str] = field(default_factory=dict)

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """The servers behind the proxy and how their tools are named and held."""

    servers: tuple[ServerSpec, ...]
    separator: str = DEFAULT_SEPARATOR
    on_schema_change: OnChange = OnChange.HOLD
    images: bool = True  # image/audio content passes (True) or is dropped with a note (False)


def _fail(code: str, message: str) -> ProxyConfigError:
    return ProxyConfigError(code, message)


def _expand(value: str, environ: Mapping[str, str], where: str) -> str:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        hint = f"${{{name}:-default}}"
        raise _fail("MCPX-CONF-ENV", f"{where}: ${{{name}}} is not set (set it or write {hint})")

    return _VAR.sub(one, value)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail("MCPX-CONF-TYPE", f"{where} must be a list of strings")
    return tuple(value)


def _table(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _fail("MCPX-CONF-TYPE", f"{where} must be an object of strings")
    return dict(value)


def _flag(raw: Mapping[str, Any], key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise _fail("MCPX-CONF-TYPE", f"{where}.{key} must be true or false")
    return value


def _server(name: str, raw: Any, environ: Mapping[str, str]) -> ServerSpec | None:
    where = f"mcpServers.{name}"
    if not _NAME.match(name):
        raise _fail(
            "MCPX-CONF-NAME",
            f"{where}: server names are 1-64 letters, digits, '_' or '-' (they prefix tool names)",
        )
    if not isinstance(raw, dict):
        raise _fail("MCPX-CONF-TYPE", f"{where} must be an object")
    unknown = sorted(set(raw) - _SERVER_KEYS - _FOREIGN_KEYS)
    if unknown:
        known = ", ".join(sorted(_SERVER_KEYS))
        raise _fail("MCPX-CONF-KEY", f"{where}: unknown key {unknown[0]!r}; an entry takes {known}")
    if raw.get("disabled") is True or raw.get("enabled") is False:
        return None
    kind = raw.get("type")
    if kind not in (None, "stdio", "http", "streamable-http", "streamableHttp"):
        raise _fail(
            "MCPX-CONF-TYPE",
            f"{where}.type {kind!r}: fak proxies stdio and Streamable HTTP servers (type 'stdio' "
            "or 'http'); the old HTTP+SSE transport is not supported",
        )
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise _fail(
            "MCPX-CONF-SERVER", f"{where}: give exactly one of command (stdio) or url (http)"
        )
    digests = _table(raw.get("tool_digests", {}), f"{where}.tool_digests")
    for tool, digest in digests.items():
        if not _DIGEST.match(digest):
            raise _fail(
                "MCPX-CONF-DIGEST",
                f"{where}.tool_digests.{tool}: expected 'sha256:' and 64 hex digits (fak mcp "
                "proxy journals the digest of every tool it lists)",
            )
    sampling = _flag(raw, "allow_sampling", where)
    elicitation = _flag(raw, "allow_elicitation", where)
    if command is not None:
        if not isinstance(command, str) or not command:
            raise _fail("MCPX-CONF-TYPE", f"{where}.command must be a non-empty string")
        args = _strings(raw.get("args", []), f"{where}.args")
        env = _table(raw.get("env", {}), f"{where}.env")
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise _fail("MCPX-CONF-TYPE", f"{where}.cwd must be a string")
        return ServerSpec(
            name,
            command=_expand(command, environ, f"{where}.command"),
            args=tuple(_expand(a, environ, f"{where}.args") for a in args),
            env={k: _expand(v, environ, f"{where}.env.{k}") for k, v in env.items()},
            cwd=None if cwd is None else _expand(cwd, environ, f"{where}.cwd"),
            tool_digests=digests,
            allow_sampling=sampling,
            allow_elicitation=elicitation,
        )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise _fail("MCPX-CONF-URL", f"{where}.url must be an http:// or https:// URL")
    if "args" in raw or "env" in raw:
        raise _fail("MCPX-CONF-SERVER", f"{where}: args/env belong to stdio servers, not a url")
    headers = _table(raw.get("headers", {}), f"{where}.headers")
    return ServerSpec(
        name,
        url=_expand(url, environ, f"{where}.url"),
        headers={k: _expand(v, environ, f"{where}.headers.{k}") for k, v in headers.items()},
        tool_digests=digests,
        allow_sampling=sampling,
        allow_elicitation=elicitation,
    )


def _fak_section(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _fail("MCPX-CONF-TYPE", "fak must be an object")
    unknown = sorted(set(raw) - _FAK_KEYS)
    if unknown:
        known = ", ".join(sorted(_FAK_KEYS))
        raise _fail("MCPX-CONF-KEY", f"fak: unknown key {unknown[0]!r}; it takes {known}")
    out: dict[str, Any] = {}
    if "separator" in raw:
        sep = raw["separator"]
        if not isinstance(sep, str) or not re.fullmatch(r"[_.:-]{1,3}", sep):
            raise _fail("MCPX-CONF-TYPE", "fak.separator: 1-3 of the characters _ . : -")
        out["separator"] = sep
    if "on_schema_change" in raw:
        try:
            out["on_schema_change"] = OnChange(raw["on_schema_change"])
        except ValueError as exc:
            msg = "fak.on_schema_change: 'hold' or 'admit_and_log'"
            raise _fail("MCPX-CONF-TYPE", msg) from exc
    if "images" in raw:
        if raw["images"] not in ("pass", "drop"):
            raise _fail("MCPX-CONF-TYPE", "fak.images: 'pass' or 'drop'")
        out["images"] = raw["images"] == "pass"
    return out


def _colliding(names: list[str], separator: str) -> tuple[str, str] | None:
    """Two server names whose exposed tool names can coincide: ``short + sep + t1`` equals
    ``long + sep + t2`` exactly when ``long`` is ``short`` plus a remainder ``r`` shorter than the
    separator with ``r + sep`` starting with ``sep`` (``a`` and ``a_`` with ``__``: both give
    ``a___b``). Names holding the separator are refused before this."""
    for short in names:
        for long in names:
            if long == short or not long.startswith(short):
                continue
            rest = long[len(short) :]
            if len(rest) < len(separator) and (rest + separator).startswith(separator):
                return short, long
    return None


def load_proxy_config(text: str | bytes, environ: Mapping[str, str] | None = None) -> ProxyConfig:
    """Parse a config document; raises ``ProxyConfigError`` naming what to fix."""
    try:
        doc = loads_strict(text)
    except DuplicateKey as exc:
        raise _fail("MCPX-CONF-JSON", f"duplicate key: {exc}") from exc
    except InvalidJson as exc:
        raise _fail("MCPX-CONF-JSON", f"not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise _fail("MCPX-CONF-TYPE", 'the file must be an object: {"mcpServers": {...}}')
    unknown = sorted(set(doc) - {"mcpServers", "fak"})
    if unknown:
        raise _fail("MCPX-CONF-KEY", f"unknown top-level key {unknown[0]!r}; use mcpServers, fak")
    servers_raw = doc.get("mcpServers")
    if not isinstance(servers_raw, dict) or not servers_raw:
        raise _fail("MCPX-CONF-SERVER", "mcpServers must name at least one server")
    env = environ or {}
    options = _fak_section(doc.get("fak", {}))
    separator = options.get("separator", DEFAULT_SEPARATOR)
    for name in servers_raw:
        if separator in name:  # else "a__b" + "c" and "a" + "b__c" would expose the same name
            raise _fail(
                "MCPX-CONF-NAME",
                f"mcpServers.{name}: a server name may not contain the separator {separator!r}",
            )
    clash = _colliding(list(servers_raw), separator)
    if clash is not None:
        first, second = clash
        raise _fail(
            "MCPX-CONF-NAME",
            f"mcpServers.{first} and mcpServers.{second} can expose the same tool name with the "
            f"separator {separator!r} (e.g. {first}{separator}{second[len(first) :]}x); rename one",
        )
    servers = tuple(
        spec for name, raw in servers_raw.items() if (spec := _server(name, raw, env)) is not None
    )
    if not servers:
        raise _fail("MCPX-CONF-SERVER", "every server in mcpServers is disabled")
    return ProxyConfig(servers, **options)


def load_proxy_config_file(
    path: str | Path, environ: Mapping[str, str] | None = None
) -> ProxyConfig:
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise _fail("MCPX-CONF-FILE", f"cannot read {path}: {exc.strerror or exc}") from exc
    return load_proxy_config(text, environ)


def single_server_config(name: str, command: str, args: tuple[str, ...]) -> ProxyConfig:
    """The ``fak mcp proxy -- CMD ARGS`` shortcut: one stdio server named ``name``."""
    if not _NAME.match(name) or DEFAULT_SEPARATOR in name:
        msg = f"--name {name!r}: 1-64 letters, digits, '_' or '-', without {DEFAULT_SEPARATOR!r}"
        raise _fail("MCPX-CONF-NAME", msg)
    return ProxyConfig((ServerSpec(name, command=command, args=args),))
