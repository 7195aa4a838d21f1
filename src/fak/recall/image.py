"""The ``recall.v1`` page table: values, strict decoding and canonical encoding (tier T2).

A manifest is one JSON document: the session's pages (step, role, descriptor, digest, length,
taint, quarantine seal and reason, durability class, clearance witness), the cleared set, revoked
witnesses and context changes (tombstones), closed by a ``checksum`` over its canonical bytes.
Decoding is all-or-nothing: malformed JSON, a foreign ``version``, an unknown or missing field,
a non-canonical encoding (any edited byte) or an inconsistent row refuses the whole manifest with
a stable ``RecallErrorCode``. No bytes of a sealed page ever appear here, only its size and reason.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fak.recall.errors import RecallError, RecallErrorCode

__all__ = [
    "DESCRIPTOR_LINE_MAX",
    "VERSION",
    "ContextChange",
    "Durability",
    "Manifest",
    "Page",
    "benign_descriptor",
    "decode_manifest",
    "encode_manifest",
    "sealed_descriptor",
    "tombstone_id",
]

VERSION: Final = "recall.v1"
DESCRIPTOR_LINE_MAX: Final = 120
TAINT_TAINTED: Final = 0
TAINT_QUARANTINED: Final = 2

Durability = Literal["turn", "session", "durable"]
Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Name = Annotated[str, Field(min_length=1, max_length=256)]
Text = Annotated[str, Field(max_length=256)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Page(_Strict):
    """One tool result of the session. A sealed page's descriptor names only reason and size."""

    step: Annotated[int, Field(ge=0)]
    role: Name
    descriptor: Annotated[str, Field(max_length=512)]
    digest: Hex64
    len: Annotated[int, Field(ge=0)]
    taint: Literal[0, 2]
    quarantined: bool
    qid: Text = ""
    reason: Text = ""
    durability: Durability = "session"
    valid_to: int | None = None
    witness: Text = ""
    trust_epoch: Annotated[int, Field(ge=0)] = 0
    utility: float = 0.0


class ContextChange(_Strict):
    """A tombstone: suppresses page-in, recall and ranking of one step; never edits the page."""

    id: Text
    action: Literal["tombstone_page"]
    step: Annotated[int, Field(ge=0)]
    digest: Hex64
    reason: Annotated[str, Field(min_length=1, max_length=256)]
    requested_by: Name
    witness: Text = ""
    trust_epoch: Annotated[int, Field(ge=0)] = 0
    applied: Literal[True] = True


class Manifest(_Strict):
    """The page table of one core image."""

    version: Literal["recall.v1"]
    session_id: Name
    world_ver: Annotated[int, Field(ge=0)]
    trust_epoch: Annotated[int, Field(ge=0)] = 0
    pages: list[Page] = Field(default_factory=list)
    cleared: dict[Text, bool] = Field(default_factory=dict)
    clearance_witness: dict[Text, Text] = Field(default_factory=dict)
    revoked_witnesses: list[Text] = Field(default_factory=list)
    context_changes: list[ContextChange] = Field(default_factory=list)


def _first_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    line = text.split("\n", 1)[0].strip()
    cut = line.encode("utf-8")[:DESCRIPTOR_LINE_MAX]
    return cut.decode("utf-8", "ignore").strip()


def benign_descriptor(role: str, data: bytes) -> str:
    """``<role>: <first line, trimmed, at most 120 bytes>`` (or just the role)."""
    line = _first_line(data)
    return f"{role}: {line}" if line else role


def sealed_descriptor(role: str, reason: str, length: int) -> str:
    """``<role>: [sealed: <REASON>, <N> bytes]``: the only thing a sealed page says about itself."""
    return f"{role}: [sealed: {reason}, {length} bytes]"


def tombstone_id(session_id: str, step: int, digest: str) -> str:
    """``ctx-`` + 12 hex of sha256(session_id NUL step NUL digest): same request, same id."""
    raw = f"{session_id}\x00{step}\x00{digest}".encode()
    return "ctx-" + hashlib.sha256(raw).hexdigest()[:12]


def _body(manifest: Manifest) -> dict[str, Any]:
    return manifest.model_dump(mode="json")


def _checksum(body: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(body)).hexdigest()


def encode_manifest(manifest: Manifest) -> bytes:
    """Canonical bytes: 2-space indented JSON in field order, ``checksum`` last, newline."""
    body = _body(manifest)
    body["checksum"] = _checksum(body)
    return orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n"


def _fail(code: RecallErrorCode, message: str) -> RecallError:
    return RecallError(code, message)


def decode_manifest(data: bytes) -> Manifest:
    """The manifest in ``data``, or ``RecallError``; nothing is returned from a bad document."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        msg = f"manifest.json is not valid JSON (truncated or edited): {exc.msg} at byte {exc.pos}"
        raise _fail(RecallErrorCode.IMAGE_MALFORMED, msg) from exc
    if not isinstance(raw, dict):
        raise _fail(RecallErrorCode.IMAGE_MALFORMED, "manifest.json is not a JSON object")
    version = raw.get("version")
    if version != VERSION:
        msg = f"foreign schema {str(version)[:40]!r}: this fak reads {VERSION!r} images only"
        raise _fail(RecallErrorCode.IMAGE_SCHEMA, msg)
    checksum = raw.pop("checksum", None)
    if not isinstance(checksum, str):
        raise _fail(RecallErrorCode.IMAGE_SCHEMA, "manifest.json has no checksum field")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "manifest"
        msg = f"manifest field {where}: {err.get('msg', 'invalid')}"
        raise _fail(RecallErrorCode.IMAGE_SCHEMA, msg) from exc
    if encode_manifest(manifest) != bytes(data) or _checksum(_body(manifest)) != checksum:
        msg = "manifest.json does not match its checksum (bytes were edited or reformatted)"
        raise _fail(RecallErrorCode.IMAGE_CHECKSUM, msg)
    _check_consistent(manifest)
    return manifest


def _check_consistent(manifest: Manifest) -> None:
    def bad(message: str) -> RecallError:
        return _fail(RecallErrorCode.IMAGE_SCHEMA, message)

    qids: set[str] = set()
    for index, page in enumerate(manifest.pages):
        if page.step != index:
            raise bad(f"page {index} has step {page.step}: steps must be 0, 1, 2, ... in order")
        if page.quarantined != (page.taint == TAINT_QUARANTINED):
            raise bad(f"page {index}: taint and quarantined disagree")
        if page.quarantined:
            if not page.qid or page.qid in qids:
                raise bad(f"page {index}: a sealed page needs a unique qid")
            qids.add(page.qid)
            if page.descriptor != sealed_descriptor(page.role, page.reason, page.len):
                raise bad(f"page {index}: a sealed page's descriptor must be the sealed form")
        elif page.qid:
            raise bad(f"page {index}: only a sealed page carries a qid")
    for qid in manifest.cleared:
        if qid not in qids:
            raise bad(f"cleared names unknown qid {qid[:40]!r}")
    for qid in manifest.clearance_witness:
        if qid not in manifest.cleared:
            raise bad(f"clearance_witness names qid {qid[:40]!r} that is not cleared")
    seen: set[str] = set()
    for change in manifest.context_changes:
        if change.step >= len(manifest.pages):
            raise bad(f"context change {change.id[:40]!r} names step {change.step}: no such page")
        page = manifest.pages[change.step]
        if change.digest != page.digest:
            raise bad(f"context change {change.id[:40]!r} does not match page {change.step}")
        if change.id != tombstone_id(manifest.session_id, change.step, change.digest):
            raise bad(f"context change {change.id[:40]!r} has the wrong id")
        if change.id in seen:
            raise bad(f"context change {change.id[:40]!r} appears twice")
        seen.add(change.id)
