"""The kernel (tier T2): decide, syscall, result admission, vDSO, tool-lock middleware.

``Kernel`` is the one decision path every boundary uses (it takes values); ``build_kernel``
assembles one from settings, the one place the kernel reads them; ``create_tool_lock`` and
``guarded_tool`` put it in front of in-process Python tools. The held-result table and the
witness store are Protocols (``HeldTable``, ``WitnessStore``) with memory implementations here
and Redis ones in ``fak.kernel.shared``.
"""

from fak.kernel.build import KernelSettings, build_kernel
from fak.kernel.guarded import guarded_tool
from fak.kernel.held import HeldTable, MemoryHeldTable
from fak.kernel.kernel import Handler, Kernel, ToolEntry
from fak.kernel.outcome import CallOutcome, deny_value, outcome_reply
from fak.kernel.quarantine import Admission, PageInRefused, QuarantineLedger, UnknownQuarantineId
from fak.kernel.toollock import (
    AdmissionAuditEvent,
    DenialKind,
    DenialReason,
    MiddlewareRequest,
    MiddlewareStage,
    ToolAdmissionDeniedError,
    admitted_args,
    create_tool_lock,
)
from fak.kernel.vdso import VdsoCache
from fak.kernel.witness import (
    Hold,
    HoldState,
    MemoryWitnessStore,
    WitnessBook,
    WitnessError,
    WitnessStore,
)

__all__ = [
    "Admission",
    "AdmissionAuditEvent",
    "CallOutcome",
    "DenialKind",
    "DenialReason",
    "Handler",
    "HeldTable",
    "Hold",
    "HoldState",
    "Kernel",
    "KernelSettings",
    "MemoryHeldTable",
    "MemoryWitnessStore",
    "MiddlewareRequest",
    "MiddlewareStage",
    "PageInRefused",
    "QuarantineLedger",
    "ToolAdmissionDeniedError",
    "ToolEntry",
    "UnknownQuarantineId",
    "VdsoCache",
    "WitnessBook",
    "WitnessError",
    "WitnessStore",
    "admitted_args",
    "build_kernel",
    "create_tool_lock",
    "deny_value",
    "guarded_tool",
    "outcome_reply",
]
