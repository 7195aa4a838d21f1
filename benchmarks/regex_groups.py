"""Reading a regular expression's groups as text (the corpus builders' rule sources).

Both ``screen_sources_secpol`` (whispers' vendor list) and ``screen_sources_msft`` (a pattern's
``refine`` group) need where a group ends; this is the one walk over a pattern's source that
knows escapes and character classes.
"""

from __future__ import annotations


def top_level(source: str, at: int) -> tuple[int, list[str]]:
    """The end of the group opening at ``source[at]`` and its top-level alternatives."""
    depth, start, parts, i = 0, at + 1, [], at
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = source.index("]", i + 2 if source[i + 1] == "^" else i + 1) + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i, [*parts, source[start:i]]
        elif char == "|" and depth == 1:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    raise ValueError(f"unbalanced group in {source!r}")
