"""RE2, compiled quietly: the one regex engine of the policy floor (tier T1).

RE2 matches in time linear in the input, so no manifest pattern can be made to backtrack.
"""

from __future__ import annotations

from typing import Any

import re2

__all__ = ["compile_re2"]


def compile_re2(pattern: str) -> Any:
    """Compile an RE2 pattern quietly (RE2 would log parse errors to stderr)."""
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options=options)
