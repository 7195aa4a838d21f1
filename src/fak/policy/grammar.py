"""The grammar-repair rung: rewrite a repairable call, refuse an unrepairable one (tier T1).

A ``Grammar`` names a tool's parameters in order and its argument aliases. With no grammar for a
tool the rung defers (it never over-refuses). A call missing required parameters is repaired by
renaming aliases, or by zipping a ``_positional`` array onto the parameter names when the arity
matches (TRANSFORM); otherwise it is refused with MISROUTE. Pure and immutable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from fak.abi import Reason, ToolCall, Verdict

__all__ = ["POSITIONAL_KEY", "Grammar", "GrammarRung", "Param"]

_DEFER: Final = Verdict.defer("grammar")

POSITIONAL_KEY: Final = "_positional"
_EMPTY: Final[Mapping[str, str]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    type: str = ""
    required: bool = True


@dataclass(frozen=True, slots=True)
class Grammar:
    params: tuple[Param, ...]
    aliases: Mapping[str, str] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        if len(set(names)) != len(names) or not all(names):
            msg = "grammar parameter names must be unique and non-empty"
            raise ValueError(msg)
        unknown = sorted(set(self.aliases.values()) - set(names))
        if unknown:
            msg = f"grammar aliases point at unknown parameters: {', '.join(unknown)}"
            raise ValueError(msg)
        object.__setattr__(self, "aliases", MappingProxyType(dict(self.aliases)))

    @classmethod
    def from_json_schema(
        cls, schema: Mapping[str, Any], aliases: Mapping[str, str] | None = None
    ) -> Grammar:
        """Parameters from a JSON-Schema object: properties sorted by name, ``required`` kept."""
        props = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        params = tuple(
            Param(name, str((props[name] or {}).get("type", "")), name in required)
            for name in sorted(props)
        )
        return cls(params, aliases or {})

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)


class GrammarRung:
    """Rank 5: repair (TRANSFORM), refuse (DENY MISROUTE), or defer."""

    __slots__ = ("_grammars",)
    name: Final = "grammar"
    rank: Final = 5

    def __init__(self, grammars: Mapping[str, Grammar] | None = None) -> None:
        self._grammars: Mapping[str, Grammar] = MappingProxyType(dict(grammars or {}))

    @property
    def tools(self) -> frozenset[str]:
        return frozenset(self._grammars)

    def decide(self, call: ToolCall, args: Mapping[str, Any] | None) -> Verdict:
        grammar = self._grammars.get(call.tool)
        if grammar is None or args is None:
            return _DEFER
        missing = [name for name in grammar.required if name not in args]
        if not missing:
            return _DEFER
        renamed = dict(args)
        for synonym, canonical in grammar.aliases.items():
            if synonym in renamed and canonical not in renamed:
                renamed[canonical] = renamed.pop(synonym)
        if renamed.keys() != args.keys() and all(n in renamed for n in grammar.required):
            return Verdict.transform(renamed, self.name, meta={"repair": "alias"})
        positional = args.get(POSITIONAL_KEY)
        if (
            isinstance(positional, Sequence)
            and not isinstance(positional, (str, bytes))
            and len(positional) == len(grammar.params)
        ):
            zipped = {k: v for k, v in args.items() if k != POSITIONAL_KEY}
            zipped.update((p.name, v) for p, v in zip(grammar.params, positional, strict=True))
            return Verdict.transform(zipped, self.name, meta={"repair": "positional"})
        claim = f"grammar {call.tool}: missing {', '.join(missing)}"
        return Verdict.deny(Reason.MISROUTE, self.name, claim=claim)
