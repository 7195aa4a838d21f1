"""The grammar-repair rung: rewrite a repairable call, refuse an unrepairable one (tier T1).

A ``Grammar`` names a tool's parameters in order and its argument aliases. With no grammar for a
tool the rung defers (it never over-refuses). A call missing required parameters is repaired by
renaming aliases, or by zipping a ``_positional`` array onto the parameter names when the arity
matches (TRANSFORM); otherwise it is refused with MISROUTE. Positional repair needs the order the
tool declared its parameters in (a JSON Schema's ``properties`` order, which JSON preserves, or
else its ``required`` order); a grammar whose order is not known refuses a positional call as
MALFORMED rather than guess which value is which. Pure and immutable.
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
    ordered: bool = True
    """False when ``params`` is not in the tool's declared order: positional repair refuses."""

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
        """Parameters in the schema's declared order: ``properties`` as written (JSON keeps object
        order), else the ``required`` list's order; with neither, the order is unknown."""
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        raw_required = schema.get("required")
        required_list = (
            [r for r in raw_required if isinstance(r, str)]
            if isinstance(raw_required, Sequence) and not isinstance(raw_required, str)
            else []
        )
        required = set(required_list)
        if props:
            names = list(props)
            ordered = True
        else:
            names = list(dict.fromkeys(required_list))
            ordered = bool(names)
        params = tuple(Param(name, _type_of(props.get(name)), name in required) for name in names)
        return cls(params, aliases or {}, ordered=ordered)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)


def _type_of(spec: object) -> str:
    return str(spec.get("type", "")) if isinstance(spec, Mapping) else ""


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
            if not grammar.ordered:
                claim = f"grammar {call.tool}: parameter order unknown; name the arguments"
                return Verdict.deny(Reason.MALFORMED, self.name, claim=claim)
            zipped = {k: v for k, v in args.items() if k != POSITIONAL_KEY}
            zipped.update((p.name, v) for p, v in zip(grammar.params, positional, strict=True))
            return Verdict.transform(zipped, self.name, meta={"repair": "positional"})
        claim = f"grammar {call.tool}: missing {', '.join(missing)}"
        return Verdict.deny(Reason.MISROUTE, self.name, claim=claim)
