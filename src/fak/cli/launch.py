"""The ``fak`` executable (tier T5): ``fak hook`` takes the launcher's fast path, every other
verb the full command line (``fak.cli.main``), so a hook call never pays for importing click and
every verb."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        from fak.hooks.client import run

        code = run(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    from fak.cli.main import main as full

    full()


if __name__ == "__main__":
    main()
