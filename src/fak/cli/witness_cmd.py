"""``fak witness`` (tier T5): list, approve and revoke the calls a running gateway holds.

The holds live in the serving process's kernel, so these verbs talk to it over HTTP (stdlib
``urllib``: no extra needed): ``GET /v1/fak/witness``, ``POST /v1/fak/witness/{id}``,
``POST /v1/fak/revoke``. Keys come from variables named by flags, never from argv: the witness
key (``X-Fak-Witness-Key``) and the client key (``Authorization: Bearer``). Exit 0 done,
1 refused by the gateway (unknown, spent, expired or revoked id; bad key), 2 cannot reach it.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import click

from fak.config import process_environ

__all__ = ["register"]

_TIMEOUT_S = 10.0


def _headers(environ: Mapping[str, str], witness_env: str, key_env: str) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if environ.get(witness_env):
        headers["x-fak-witness-key"] = environ[witness_env]
    if environ.get(key_env):
        headers["authorization"] = f"Bearer {environ[key_env]}"
    return headers


def _call(url: str, method: str, headers: dict[str, str], body: Any = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            return dict(json.loads(response.read() or b"{}"))
    except urllib.error.HTTPError as exc:
        try:
            error = json.loads(exc.read() or b"{}").get("error", {})
        except ValueError:
            error = {}
        code = error.get("code", f"http_{exc.code}")
        message = error.get("message", exc.reason)
        click.secho(f"refused: [{code}] {message}", fg="red", err=True)
        sys.exit(1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        click.secho(f"error: cannot reach the gateway at {url}: {reason}", fg="red", err=True)
        sys.exit(2)


def register(group: click.Group) -> None:
    @group.group("witness")
    @click.option(
        "--url",
        default="http://127.0.0.1:8080",
        show_default=True,
        help="Origin of the running fak serve.",
    )
    @click.option(
        "--witness-key-env",
        default="FAK_WITNESS_KEY",
        show_default=True,
        metavar="VAR",
        help="Variable holding the witness key (sent as X-Fak-Witness-Key when set).",
    )
    @click.option(
        "--key-env",
        default="FAK_API_KEY",
        show_default=True,
        metavar="VAR",
        help="Variable holding the gateway's client key (sent as a bearer token when set).",
    )
    @click.pass_context
    def witness(ctx: click.Context, url: str, witness_key_env: str, key_env: str) -> None:
        """Held calls (REQUIRE_WITNESS): list them, approve one, revoke a witness."""
        ctx.obj = (url.rstrip("/"), _headers(process_environ(), witness_key_env, key_env))

    @witness.command("list")
    @click.option("--json", "as_json", is_flag=True, help="Print the gateway's JSON.")
    @click.pass_obj
    def list_(obj: tuple[str, dict[str, str]], as_json: bool) -> None:
        """Every hold the gateway knows, oldest first."""
        url, headers = obj
        out = _call(f"{url}/v1/fak/witness", "GET", headers)
        if as_json:
            click.echo(json.dumps(out, indent=2))
            return
        for hold in out.get("witnesses", []):
            click.echo(
                f"{hold['id']}  {hold['state']:<8}  {hold['tool']}  "
                f"args sha256:{hold['args_digest'][:16]}…  {hold['claim']}"
            )
        click.echo(f"trust_epoch={out.get('trust_epoch', 0)}")

    @witness.command("approve")
    @click.argument("hold_id")
    @click.pass_obj
    def approve(obj: tuple[str, dict[str, str]], hold_id: str) -> None:
        """Approve one held call: its next identical proposal is admitted once."""
        url, headers = obj
        out = _call(f"{url}/v1/fak/witness/{hold_id}", "POST", headers)
        hold = out.get("witness", {})
        click.echo(f"approved {hold.get('id', hold_id)}: {hold.get('tool', '?')} (single use)")

    @witness.command("revoke")
    @click.argument("hold_id")
    @click.pass_obj
    def revoke(obj: tuple[str, dict[str, str]], hold_id: str) -> None:
        """Retire a witness: what was admitted under it is evicted, its clearances resealed."""
        url, headers = obj
        out = _call(f"{url}/v1/fak/revoke", "POST", headers, {"witness": hold_id})
        click.echo(
            f"revoked {hold_id}: evicted={out.get('evicted', 0)} "
            f"resealed={out.get('resealed', 0)} trust_epoch={out.get('trust_epoch', 0)}"
        )
