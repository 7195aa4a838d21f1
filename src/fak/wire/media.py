"""A user's own media parts across the wires (tier T1, pure, no I/O).

An image, file or audio part of a user message is the user's content, not a tool's output: fak
has no text in it to screen and no reason to hold it back. ``read_part`` keeps one as a
``Part`` in the wire that wrote it; ``render_part`` writes it for the upstream's wire: unchanged
on the same wire, translated where the two wires have the same thing (an image by URL or by
base64 data, a file by id or by data), and otherwise a ``WireError`` naming the part, never a
silent drop. Media inside a tool result is another matter: it stays held out (the wire parsers
write a ``[fak]`` note in its place).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fak.abi.turn import Part
from fak.wire.errors import WireError
from fak.wire.names import WireName

__all__ = ["MEDIA_TYPES", "read_part", "render_part"]

# The part types each wire carries as a user's media.
MEDIA_TYPES = {
    WireName.OPENAI_CHAT: frozenset({"image_url", "input_audio", "file"}),
    WireName.OPENAI_RESPONSES: frozenset({"input_image", "input_file"}),
    WireName.ANTHROPIC: frozenset({"image", "document"}),
}


def read_part(wire: WireName, raw: Mapping[str, Any], at: str) -> Part:
    return Part(str(wire), dict(raw), at)


def _cannot(part: Part, target: WireName) -> WireError:
    kind = part.raw.get("type")
    return WireError(
        "unsupported_content",
        f"{part.at} ({kind}) has no equivalent on the upstream's wire ({target}); "
        "send it to an upstream of the client's own wire, or leave it out",
        part.at,
    )


# -- a neutral reading: ("image", url) | ("image", data_url) | ("file", fields) ---------------
def _data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def _split_data_url(url: str) -> tuple[str, str] | None:
    head, sep, data = url.partition(",")
    if not (sep and head.startswith("data:") and head.endswith(";base64")):
        return None
    return head[5:-7], data


def _image_url(part: Part) -> str | None:
    raw = part.raw
    match part.wire:
        case WireName.OPENAI_CHAT:
            inner = raw.get("image_url")
            url = inner.get("url") if isinstance(inner, Mapping) else None
            return url if isinstance(url, str) else None
        case WireName.OPENAI_RESPONSES:
            url = raw.get("image_url")
            return url if isinstance(url, str) else None
        case WireName.ANTHROPIC:
            src = raw.get("source")
            if not isinstance(src, Mapping):
                return None
            if src.get("type") == "url" and isinstance(src.get("url"), str):
                return str(src["url"])
            if src.get("type") == "base64" and isinstance(src.get("data"), str):
                return _data_url(str(src.get("media_type") or "image/png"), src["data"])
    return None


def _detail(part: Part) -> str | None:
    raw = part.raw
    if part.wire == WireName.OPENAI_CHAT:
        inner = raw.get("image_url")
        value = inner.get("detail") if isinstance(inner, Mapping) else None
    else:
        value = raw.get("detail")
    return value if isinstance(value, str) else None


def _image(part: Part, target: WireName) -> dict[str, Any]:
    url = _image_url(part)
    if url is None:
        raise _cannot(part, target)
    detail = _detail(part)
    match target:
        case WireName.OPENAI_CHAT:
            image: dict[str, Any] = {"url": url}
            if detail:
                image["detail"] = detail
            return {"type": "image_url", "image_url": image}
        case WireName.OPENAI_RESPONSES:
            out: dict[str, Any] = {"type": "input_image", "image_url": url}
            out["detail"] = detail or "auto"
            return out
        case WireName.ANTHROPIC:
            split = _split_data_url(url)
            if split is not None:
                media_type, data = split
                source = {"type": "base64", "media_type": media_type, "data": data}
                return {"type": "image", "source": source}
            return {"type": "image", "source": {"type": "url", "url": url}}
    raise _cannot(part, target)  # pragma: no cover - the match is total


def _file_fields(part: Part) -> dict[str, str]:
    """A chat ``file`` or a Responses ``input_file`` as its id/data/name fields."""
    raw = part.raw
    inner = raw.get("file") if part.wire == WireName.OPENAI_CHAT else raw
    if not isinstance(inner, Mapping):
        return {}
    return {k: str(inner[k]) for k in ("file_id", "file_data", "filename") if inner.get(k)}


def _file(part: Part, target: WireName) -> dict[str, Any]:
    fields = _file_fields(part)
    if not fields or target == WireName.ANTHROPIC:
        raise _cannot(part, target)
    if target == WireName.OPENAI_CHAT:
        return {"type": "file", "file": fields}
    return {"type": "input_file", **fields}


def render_part(part: Part, target: WireName) -> dict[str, Any]:
    """``part`` as the upstream's wire ``target`` writes it (unchanged on the same wire)."""
    if part.wire == target:
        return dict(part.raw)
    kind = part.raw.get("type")
    if kind in ("image_url", "input_image", "image"):
        return _image(part, target)
    if kind in ("file", "input_file"):
        return _file(part, target)
    raise _cannot(part, target)  # audio, Anthropic documents: no equivalent elsewhere
