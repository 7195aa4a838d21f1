"""The preflight ladder rung: static checks before the monitor (tier T1).

Rung 0: the arguments must be a JSON object (raw text that does not parse as one is MALFORMED).
Rung 1: if a schema is installed for the tool, every required field is present and every present
declared field has its JSON type, else MALFORMED. With no schema the rung defers. ``Schema`` is a
small JSON-Schema subset (type/properties/required) validated when it is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from fak.abi import Reason, ToolCall, Verdict
from fak.policy.names import is_plain_name

__all__ = ["JSON_TYPES", "PreflightRung", "Schema"]

_DEFER: Final = Verdict.defer("preflight")

JSON_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_EMPTY: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({})


def _is_type(value: object, json_type: str) -> bool:
    match json_type:
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "integer":
            return (isinstance(value, int) and not isinstance(value, bool)) or (
                isinstance(value, float) and value.is_integer()
            )
        case "number":
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        case "object":
            return isinstance(value, Mapping)
        case "array":
            return isinstance(value, (list, tuple))
        case "null":
            return value is None
    return False


@dataclass(frozen=True, slots=True)
class Schema:
    """Required field names, declared JSON types per property, and whether others may appear."""

    required: tuple[str, ...] = ()
    types: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _EMPTY)
    allow_extra: bool = True
    known: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name, allowed in self.types.items():
            bad = sorted(set(allowed) - JSON_TYPES)
            if bad or not allowed:
                msg = f"schema property {name!r}: unknown JSON type(s) {bad or allowed}"
                raise ValueError(msg)
        object.__setattr__(self, "types", MappingProxyType(dict(self.types)))
        object.__setattr__(
            self, "known", frozenset(self.known) | frozenset(self.required) | frozenset(self.types)
        )

    @classmethod
    def from_json_schema(cls, schema: Mapping[str, Any]) -> Schema:
        props = schema.get("properties") or {}
        types: dict[str, tuple[str, ...]] = {}
        for name, prop in props.items():
            declared = (prop or {}).get("type")
            if declared is None:
                continue
            types[name] = (declared,) if isinstance(declared, str) else tuple(declared)
        extra = schema.get("additionalProperties", True) is not False
        return cls(tuple(schema.get("required") or ()), types, extra, frozenset(props))

    def problem(self, args: Mapping[str, Any]) -> str | None:
        """The first violated check as a bounded witness (field names only), or None."""
        for name in self.required:
            if name not in args:
                return f"rung-1: missing required field {name}"
        for name, allowed in self.types.items():
            if name in args and not any(_is_type(args[name], t) for t in allowed):
                return f"rung-1: field {name} is not {'|'.join(allowed)}"
        if not self.allow_extra:
            unknown = sorted(str(k) for k in args if k not in self.known)
            if unknown:
                return f"rung-1: unknown field {unknown[0][:64]}"
        return None


class PreflightRung:
    """Rank 10: DENY MALFORMED on a failed ladder rung, else defer."""

    __slots__ = ("_schemas",)
    name: Final = "preflight"
    rank: Final = 10

    def __init__(self, schemas: Mapping[str, Schema] | None = None) -> None:
        self._schemas: Mapping[str, Schema] = MappingProxyType(dict(schemas or {}))

    @property
    def tools(self) -> frozenset[str]:
        return frozenset(self._schemas)

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        if not is_plain_name(call.tool):
            claim = "rung-0: tool name is not a plain identifier [A-Za-z0-9_.:-]"
            return Verdict.deny(Reason.MALFORMED, self.name, claim=claim)
        if args is None:
            claim = "rung-0: arguments are not a JSON object"
            return Verdict.deny(Reason.MALFORMED, self.name, claim=claim)
        schema = self._schemas.get(call.tool)
        if schema is None:
            return _DEFER
        problem = schema.problem(args)
        if problem is not None:
            return Verdict.deny(Reason.MALFORMED, self.name, claim=problem)
        return _DEFER
