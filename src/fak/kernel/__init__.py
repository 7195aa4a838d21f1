"""The kernel (tier T2): decide, syscall, result admission, vDSO, tool-lock middleware.

``Kernel`` is the one decision path every boundary uses; ``build_kernel`` assembles one from
settings; ``create_tool_lock`` and ``guarded_tool`` put it in front of in-process Python tools.
"""

from fak.kernel.build import KernelSettings, build_kernel
from fak.kernel.kernel import Handler, Kernel, ToolEntry
from fak.kernel.outcome import CallOutcome, deny_value, outcome_reply
from fak.kernel.quarantine import Admission, PageInRefused, QuarantineLedger, UnknownQuarantineId
from fak.kernel.vdso import VdsoCache

__all__ = [
    "Admission",
    "CallOutcome",
    "Handler",
    "Kernel",
    "KernelSettings",
    "PageInRefused",
    "QuarantineLedger",
    "ToolEntry",
    "UnknownQuarantineId",
    "VdsoCache",
    "build_kernel",
    "deny_value",
    "outcome_reply",
]
