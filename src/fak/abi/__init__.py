"""The frozen vocabulary of fak (tier T0): reasons, verdicts, call/result values, turn IR, seams.

Stdlib only, no I/O. Everything above imports from here; this package imports nothing above it.
"""

from fak.abi.context import Context, Piece, PieceKind
from fak.abi.protocols import (
    AuditJournal,
    BlobStore,
    Clock,
    JournalSink,
    Planner,
    PlannerEvent,
    PlannerInputError,
    Reachable,
    TextDelta,
    TurnDone,
)
from fak.abi.reasons import Disposition, Reason, disposition, reason_by_name, reason_name
from fak.abi.replies import (
    REGISTRY,
    Reply,
    ReplyBuilder,
    ReplyEnvelope,
    ReplyType,
    reply_for_reason,
    reply_for_verdict,
    safe_tool,
)
from fak.abi.turn import (
    FinishReason,
    Message,
    PlannerTurn,
    ProposedCall,
    Role,
    ToolSpec,
    TurnRequest,
    Usage,
)
from fak.abi.types import INLINE_MAX, Ref, RefKind, ToolCall, ToolResult
from fak.abi.verdicts import Verdict, VerdictKind, fold_rank

__all__ = [
    "INLINE_MAX",
    "REGISTRY",
    "AuditJournal",
    "BlobStore",
    "Clock",
    "Context",
    "Disposition",
    "FinishReason",
    "JournalSink",
    "Message",
    "Piece",
    "PieceKind",
    "Planner",
    "PlannerEvent",
    "PlannerInputError",
    "PlannerTurn",
    "ProposedCall",
    "Reachable",
    "Reason",
    "Ref",
    "RefKind",
    "Reply",
    "ReplyBuilder",
    "ReplyEnvelope",
    "ReplyType",
    "Role",
    "TextDelta",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "TurnDone",
    "TurnRequest",
    "Usage",
    "Verdict",
    "VerdictKind",
    "disposition",
    "fold_rank",
    "reason_by_name",
    "reason_name",
    "reply_for_reason",
    "reply_for_verdict",
    "safe_tool",
]
