"""``fak serve --upstreams FILE``: LiteLLM's proxy config read into routing groups (tier T3).

Reads the subset of LiteLLM's ``config.yaml`` that routing needs: ``model_list`` entries
(``model_name`` + ``litellm_params``: ``model`` with an ``openai/``, ``hosted_vllm/``,
``anthropic/`` or ``fak/engine`` prefix, ``api_base``, ``api_key``, ``rpm``, ``tpm``,
``timeout``, ``weight``, the per-token costs; ``model_info``: ``id``, ``max_input_tokens``),
``router_settings`` (``routing_strategy``, ``num_retries``, ``allowed_fails``, ``cooldown_time``,
``retry_after``, ``fallbacks``, ``timeout``) and ``litellm_settings`` (``fallbacks``,
``num_retries``, ``request_timeout``). Any other key is *unsupported*: each is reported once, by
its path with list indices folded (``model_list[].litellm_params.vertex_project``), and the load
fails with one line per key unless ``ignore_unsupported`` is set (then the lines are warnings
and the key has no effect). ``os.environ/VAR`` values are resolved from the ``environ`` the CLI
passes (fak.config's ``process_environ``); this module never reads the process environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from fak.gateway.upstream.strategies import STRATEGIES, Deployment, Group, UpstreamKind

__all__ = [
    "BAD",
    "UNSUPPORTED",
    "RouterConfig",
    "UpstreamsError",
    "load_upstreams",
    "parse_upstreams",
]

BAD = "[FAK-UPSTREAMS-BAD]"  # a value fak cannot use (a missing field, an unset variable, ...)
UNSUPPORTED = "[FAK-UPSTREAMS-UNSUPPORTED]"  # a LiteLLM key fak's router does not implement

_ENV = "os.environ/"
_DEFAULT_BASE = {
    UpstreamKind.OPENAI: "https://api.openai.com/v1",
    UpstreamKind.ANTHROPIC: "https://api.anthropic.com",
}
_KNOWN_TOP = frozenset({"model_list", "router_settings", "litellm_settings"})
_KNOWN_ENTRY = frozenset({"model_name", "litellm_params", "model_info"})
_KNOWN_PARAMS = frozenset(
    {
        "model",
        "api_base",
        "api_key",
        "rpm",
        "tpm",
        "timeout",
        "weight",
        "input_cost_per_token",
        "output_cost_per_token",
    }
)
_KNOWN_INFO = frozenset({"id", "max_input_tokens"})
_KNOWN_ROUTER = frozenset(
    {
        "routing_strategy",
        "num_retries",
        "allowed_fails",
        "cooldown_time",
        "retry_after",
        "fallbacks",
        "timeout",
    }
)
_KNOWN_LITELLM = frozenset({"fallbacks", "num_retries", "request_timeout"})


class UpstreamsError(ValueError):
    """The upstreams file cannot be used; ``lines`` holds one message per problem."""

    def __init__(self, source: str, lines: Sequence[str]) -> None:
        self.source = source
        self.lines = tuple(lines)
        super().__init__("\n".join(f"{source}: {line}" for line in self.lines))


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """What ``Router`` runs with: the groups by client-visible name and the retry rules.

    ``num_retries`` counts attempts after the first across the whole chain (this group's other
    deployments, then its fallback groups'); ``allowed_fails`` failures in a row put a
    deployment in cooldown for ``cooldown_s`` (a 429's ``Retry-After`` when it is longer);
    ``retry_after_s`` is the first backoff between attempts, doubled each time, capped at 2 s.
    ``unsupported`` lists the keys that were ignored (``ignore_unsupported``)."""

    groups: Mapping[str, Group]
    routing_strategy: str = "simple-shuffle"
    num_retries: int = 2
    allowed_fails: int = 1
    cooldown_s: float = 5.0
    retry_after_s: float = 0.0
    timeout_s: float = 0.0
    unsupported: tuple[str, ...] = ()

    @property
    def deployments(self) -> tuple[Deployment, ...]:
        return tuple(d for g in self.groups.values() for d in g.deployments)


class _Reader:
    """Walks the document, collecting unsupported keys (once each) and errors (every one)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.unsupported: dict[str, None] = {}
        self.errors: list[str] = []

    def keys(self, node: Mapping[str, Any], known: frozenset[str], where: str) -> None:
        for key in node:
            if key not in known:
                self.unsupported[f"{where}{key}" if where else str(key)] = None

    def mapping(self, value: Any, where: str) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.errors.append(f"{where}: expected a mapping, got {type(value).__name__}")
            return {}
        return value

    def text(self, value: Any, where: str, *, secret: bool = False) -> str:
        if value is None:
            return ""
        if not isinstance(value, str):
            if isinstance(value, int | float) and not secret:
                return str(value)
            self.errors.append(f"{where}: expected a string")
            return ""
        if value.startswith(_ENV):
            var = value[len(_ENV) :]
            resolved = self.environ.get(var, "")
            if not resolved:
                self.errors.append(f"{where}: {value}: the variable {var} is unset or empty")
            return resolved
        return value

    def number(self, value: Any, where: str, *, integer: bool = False) -> float:
        if value is None:
            return 0.0
        if isinstance(value, str) and value.startswith(_ENV):
            value = self.text(value, where)
        try:
            number = float(value) if not integer else float(int(value))
        except (TypeError, ValueError):
            self.errors.append(f"{where}: expected a number, got {value!r}"[:200])
            return 0.0
        if number < 0:
            self.errors.append(f"{where}: must not be negative")
            return 0.0
        return number


def _kind(model: str, where: str, reader: _Reader) -> tuple[UpstreamKind, str] | None:
    prefix, sep, name = model.partition("/")
    if not sep:
        if model.startswith("claude"):
            return UpstreamKind.ANTHROPIC, model
        if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt")):
            return UpstreamKind.OPENAI, model
        reader.errors.append(
            f"{where}: {model!r} has no provider prefix; write openai/NAME (any OpenAI-compatible "
            "server), hosted_vllm/NAME, anthropic/NAME or fak/engine"
        )
        return None
    try:
        kind = UpstreamKind(prefix)
    except ValueError:
        reader.unsupported[f"model_list[].litellm_params.model provider {prefix}/"] = None
        return None
    if kind is UpstreamKind.ENGINE and name != "engine":
        reader.errors.append(f"{where}: the in-kernel engine is written fak/engine, not {model!r}")
        return None
    return kind, name


def _deployment(entry: Any, index: int, reader: _Reader) -> Deployment | None:
    where = f"model_list[{index}]"
    node = reader.mapping(entry, where)
    reader.keys(node, _KNOWN_ENTRY, "model_list[].")
    group = reader.text(node.get("model_name"), f"{where}.model_name")
    if not group:
        reader.errors.append(f"{where}: model_name is missing")
        return None
    if "*" in group:
        reader.unsupported["model_list[].model_name wildcards (*)"] = None
        return None
    params = reader.mapping(node.get("litellm_params"), f"{where}.litellm_params")
    reader.keys(params, _KNOWN_PARAMS, "model_list[].litellm_params.")
    info = reader.mapping(node.get("model_info"), f"{where}.model_info")
    reader.keys(info, _KNOWN_INFO, "model_list[].model_info.")
    model = reader.text(params.get("model"), f"{where}.litellm_params.model")
    if not model:
        reader.errors.append(f"{where}: litellm_params.model is missing")
        return None
    parsed = _kind(model, f"{where}.litellm_params.model", reader)
    if parsed is None:
        return None
    kind, upstream_model = parsed
    p = f"{where}.litellm_params."
    api_base = reader.text(params.get("api_base"), p + "api_base").rstrip("/")
    if not api_base and kind is not UpstreamKind.ENGINE:
        api_base = _DEFAULT_BASE.get(kind, "")
        if not api_base:
            reader.errors.append(f"{where}: {kind}/ needs litellm_params.api_base")
    weight = params.get("weight")
    rpm = int(reader.number(params.get("rpm"), p + "rpm", integer=True))
    tpm = int(reader.number(params.get("tpm"), p + "tpm", integer=True))
    return Deployment(
        id=reader.text(info.get("id"), f"{where}.model_info.id") or f"{group}/{index}",
        group=group,
        kind=kind,
        model=upstream_model if kind is not UpstreamKind.ENGINE else "",
        api_base=api_base,
        api_key=reader.text(params.get("api_key"), p + "api_key", secret=True) or None,
        rpm=rpm,
        tpm=tpm,
        timeout_s=reader.number(params.get("timeout"), p + "timeout"),
        # LiteLLM's simple-shuffle weighs by weight, else rpm, else tpm
        weight=reader.number(weight, p + "weight")
        if weight is not None
        else float(rpm or tpm or 1),
        input_cost_per_token=reader.number(
            params.get("input_cost_per_token"), p + "input_cost_per_token"
        ),
        output_cost_per_token=reader.number(
            params.get("output_cost_per_token"), p + "output_cost_per_token"
        ),
        max_input_tokens=int(
            reader.number(info.get("max_input_tokens"), f"{where}.model_info.max_input_tokens")
        ),
        order=index,
    )


def _fallbacks(value: Any, where: str, reader: _Reader) -> dict[str, tuple[str, ...]]:
    """LiteLLM's ``[{"group": ["other", ...]}, ...]``."""
    out: dict[str, tuple[str, ...]] = {}
    if value is None:
        return out
    if not isinstance(value, list):
        reader.errors.append(f"{where}: expected a list of {{group: [fallback, ...]}}")
        return out
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            reader.errors.append(f"{where}[{i}]: expected {{group: [fallback, ...]}}")
            continue
        for name, targets in item.items():
            if isinstance(targets, str):
                targets = [targets]
            if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
                reader.errors.append(f"{where}[{i}].{name}: expected a list of model names")
                continue
            out[str(name)] = (*out.get(str(name), ()), *targets)
    return out


def parse_upstreams(
    document: Any,
    environ: Mapping[str, str],
    *,
    source: str = "upstreams",
    ignore_unsupported: bool = False,
) -> RouterConfig:
    """The ``RouterConfig`` of a decoded LiteLLM config; ``UpstreamsError`` lists every problem
    (and every unsupported key, unless ``ignore_unsupported``)."""
    reader = _Reader(environ)
    top = reader.mapping(document, "the file")
    reader.keys(top, _KNOWN_TOP, "")
    entries = top.get("model_list")
    if not isinstance(entries, list) or not entries:
        reader.errors.append("model_list: expected a non-empty list of deployments")
        entries = []
    deployments = [d for i, e in enumerate(entries) if (d := _deployment(e, i, reader))]
    router = reader.mapping(top.get("router_settings"), "router_settings")
    reader.keys(router, _KNOWN_ROUTER, "router_settings.")
    settings = reader.mapping(top.get("litellm_settings"), "litellm_settings")
    reader.keys(settings, _KNOWN_LITELLM, "litellm_settings.")
    strategy = reader.text(router.get("routing_strategy"), "router_settings.routing_strategy")
    strategy = strategy or "simple-shuffle"
    if strategy not in STRATEGIES:
        reader.errors.append(
            f"router_settings.routing_strategy: {strategy!r} is not one of {', '.join(STRATEGIES)}"
        )
    fallbacks = _fallbacks(settings.get("fallbacks"), "litellm_settings.fallbacks", reader)
    for name, targets in _fallbacks(
        router.get("fallbacks"), "router_settings.fallbacks", reader
    ).items():
        fallbacks[name] = (*fallbacks.get(name, ()), *targets)
    seen: dict[str, Deployment] = {}
    by_group: dict[str, list[Deployment]] = {}
    for d in deployments:
        if d.id in seen:
            reader.errors.append(f"model_info.id {d.id!r} names two deployments")
        seen[d.id] = d
        by_group.setdefault(d.group, []).append(d)
    for name, targets in fallbacks.items():
        for target in (name, *targets):
            if target not in by_group:
                reader.errors.append(f"fallbacks: {target!r} is not a model_name in model_list")
    retries = router.get("num_retries", settings.get("num_retries"))
    timeout = router.get("timeout", settings.get("request_timeout"))
    unsupported = tuple(f"{UNSUPPORTED} {key}: not supported by fak" for key in reader.unsupported)
    if not deployments and not reader.errors and ignore_unsupported:
        reader.errors.append("model_list: no deployment fak can route")
    if reader.errors or (unsupported and not ignore_unsupported):
        raise UpstreamsError(source, [*(f"{BAD} {e}" for e in reader.errors), *unsupported])
    groups = {
        name: Group(name, tuple(ds), tuple(dict.fromkeys(fallbacks.get(name, ()))))
        for name, ds in by_group.items()
    }
    return RouterConfig(
        groups=groups,
        routing_strategy=strategy,
        num_retries=int(reader.number(retries, "num_retries", integer=True))
        if retries is not None
        else 2,
        allowed_fails=max(
            1, int(reader.number(router.get("allowed_fails", 1), "allowed_fails", integer=True))
        ),
        cooldown_s=reader.number(router.get("cooldown_time", 5), "cooldown_time"),
        retry_after_s=reader.number(router.get("retry_after", 0), "retry_after"),
        timeout_s=reader.number(timeout, "timeout"),
        unsupported=unsupported,
    )


def load_upstreams(
    path: str, environ: Mapping[str, str], *, ignore_unsupported: bool = False
) -> RouterConfig:
    """Read and parse the YAML file at ``path`` (``UpstreamsError`` for a file that cannot be
    read or parsed, with the line of the YAML error)."""
    try:
        with open(path, encoding="utf-8") as f:
            document = yaml.safe_load(f)
    except OSError as exc:
        raise UpstreamsError(path, [f"{BAD} cannot read the file: {exc.strerror or exc}"]) from exc
    except yaml.YAMLError as exc:
        mark = exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise UpstreamsError(path, [f"{BAD} not YAML{at}"]) from exc
    return parse_upstreams(document, environ, source=path, ignore_unsupported=ignore_unsupported)
