"""The operator's console (tier T3): a web page over the held calls, quarantine, the record
and health, served by ``fak serve`` at ``/console`` unless ``--no-console``.

``pages`` serves the static files (``static/``: one HTML page, one ES module, one style sheet;
no build step) with a strict Content-Security-Policy; ``api`` adds the JSON the page needs
beyond the existing routes (holds with their evidence, the chain check, page-in under a
witness); ``evidence`` finds where a held call's values sit in the run. The page acts through
the same endpoints as the CLI (``/v1/fak/witness``, ``/v1/fak/revoke``), with the same keys.
"""

from __future__ import annotations

from starlette.routing import Route

from fak.gateway.console import api, pages
from fak.gateway.console.api import Findings
from fak.gateway.console.pages import ASSET_PATHS, CSP

__all__ = ["ASSET_PATHS", "CSP", "ROUTES", "Findings"]

ROUTES: list[Route] = [*pages.ROUTES, *api.ROUTES]
