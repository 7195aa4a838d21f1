"""Test-wide settings.

Hypothesis draws new examples on every run, which is how a developer's runs keep finding new
counterexamples. Under CI (``.ci/run`` sets ``HYPOTHESIS_PROFILE=ci``; a ``CI`` variable does
too) it draws the same examples every time, so a clean clone's verdict does not depend on
luck: a counterexample found locally is fixed and pinned, not left for CI to stumble on.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "")
if _PROFILE:
    settings.load_profile(_PROFILE)
