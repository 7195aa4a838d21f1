"""Tool names: what counts as one, and the one key every name match uses (tier T1).

A tool name is a plain identifier: after NFKC normalisation it is made of ASCII letters, digits
and ``_ . : -`` only. Anything else (spaces, zero-width or control characters, other scripts) is
not a name a policy can reason about, and the floor refuses the call as MALFORMED. Deny entries
and arg rules match on ``match_key`` (NFKC, then casefold), so ``db_Drop_table`` or a full-width
``ｄb_drop_table`` cannot slip past a deny of ``db_drop_table``. Pure.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

__all__ = ["is_plain_name", "match_key", "normal_name"]

_PLAIN: Final = re.compile(r"[A-Za-z0-9_.:-]+")


@lru_cache(maxsize=8192)
def normal_name(tool: str) -> str | None:
    """The NFKC form of ``tool`` when it is a plain identifier, else None."""
    if not isinstance(tool, str):
        return None
    form = unicodedata.normalize("NFKC", tool)
    return form if _PLAIN.fullmatch(form) else None


def is_plain_name(tool: str) -> bool:
    return normal_name(tool) is not None


def match_key(tool: str) -> str:
    """The key deny entries and arg rules are matched on: NFKC + casefold (raw casefold for a
    name that is not plain; such a call is refused as MALFORMED before it matters)."""
    form = normal_name(tool)
    return (form if form is not None else tool).casefold()
