"""The console's static page (tier T3): three files from the wheel, served with a strict CSP.

``/console`` (and ``/console/``) is ``index.html``; ``/console/app.js`` and ``/console/app.css``
are the script and the style. No build step, no templating: the files are read once from the
package and served as they are. They carry no data and no secret, so they are served without a
key (the middleware lists them as open paths); everything the page shows it fetches from the
API with the key the operator types in. Every answer carries a Content-Security-Policy that
allows only these files (no inline script, no eval, no frames, no other origin) and headers that
keep it out of frames and referrers.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["ASSET_PATHS", "CSP", "ROUTES", "security_headers"]

CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_FILES: Final = {
    "/console": ("index.html", "text/html; charset=utf-8"),
    "/console/": ("index.html", "text/html; charset=utf-8"),
    "/console/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/console/app.css": ("app.css", "text/css; charset=utf-8"),
}
ASSET_PATHS: Final = tuple(_FILES)


def security_headers() -> dict[str, str]:
    return {
        "content-security-policy": CSP,
        "x-content-type-options": "nosniff",
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
        "cross-origin-opener-policy": "same-origin",
    }


@functools.cache
def _read(name: str) -> bytes:
    return resources.files("fak.gateway.console").joinpath("static", name).read_bytes()


async def asset(request: Request) -> Response:
    name, media = _FILES[request.url.path]
    return Response(_read(name), media_type=media, headers=security_headers())


ROUTES: list[Route] = [Route(path, asset, methods=["GET", "HEAD"]) for path in _FILES]
