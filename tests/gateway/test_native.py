"""The fak-native routes: adjudicate, syscall, admit, policy reload, events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fak.gateway.routes.native import file_events
from fak.kernel import Kernel
from fak.policy import Policy
from fak.testing.planner import MockPlanner

from .conftest import SECRET, asgi_client

pytestmark = pytest.mark.gateway


def post_all(app: Any, calls: list[tuple[str, Any]]) -> list[Any]:
    async def main() -> list[Any]:
        async with asgi_client(app) as c:
            return [await c.post(path, json=body) for path, body in calls]

    return asyncio.run(main())


def test_adjudicate_allow_deny_transform(app_factory: Callable[..., Any]) -> None:
    app = app_factory(MockPlanner())
    allow, deny, transform, ignored = post_all(
        app,
        [
            ("/v1/fak/adjudicate", {"tool": "read_file", "arguments": {"path": "a"}}),
            (
                "/v1/fak/adjudicate",
                {"tool": "refund_payment", "arguments": "{}", "trace_id": "t-1"},
            ),
            (
                "/v1/fak/adjudicate",
                {"tool": "read_file", "arguments": {"path": "a", "password": "hunter2"}},
            ),
            ("/v1/fak/adjudicate", {"tool": "read_file", "args": {"path": "/etc/shadow"}}),
        ],
    )
    assert allow.status_code == 200
    assert allow.json()["verdict"] == {"kind": "ALLOW", "by": "monitor"}
    assert "repaired_arguments" not in allow.json()
    assert deny.status_code == 200  # a refusal is a value
    assert deny.json()["verdict"]["kind"] == "DENY"
    assert deny.json()["verdict"]["reason"] == "DEFAULT_DENY"
    assert deny.json()["trace_id"] == "t-1"
    assert transform.json()["verdict"]["kind"] == "TRANSFORM"
    assert transform.json()["repaired_arguments"] == {"path": "a", "password": "[REDACTED]"}
    # the body key is `arguments`: a typo'd `args` is refused by name, never judged as a call
    # with no arguments (an ALLOW the client would spend on the arguments it holds)
    assert ignored.status_code == 400
    assert ignored.json()["error"]["code"] == "unknown_field"
    assert ignored.json()["error"]["param"] == "args"
    assert "arguments" in ignored.json()["error"]["message"]


def test_missing_tool_is_a_400(app_factory: Callable[..., Any]) -> None:
    [r] = post_all(app_factory(MockPlanner()), [("/v1/fak/adjudicate", {"arguments": {}})])
    assert r.status_code == 400 and r.json()["error"]["code"] == "missing_tool"


def test_native_routes_refuse_a_field_they_do_not_read_and_admit_wants_a_result(
    app_factory: Callable[..., Any],
) -> None:
    kernel = Kernel(Policy.default())
    kernel.register_tool("read_file", lambda args: "text", read_only=True)
    app = app_factory(MockPlanner(), kernel=kernel)
    content, no_result, extra, syscall_extra, empty = post_all(
        app,
        [
            ("/v1/fak/admit", {"tool": "fetch", "content": "key " + SECRET}),
            ("/v1/fak/admit", {"tool": "fetch"}),
            ("/v1/fak/admit", {"tool": "fetch", "result": "ok", "trace_id": "t", "mode": 1}),
            ("/v1/fak/syscall", {"tool": "read_file", "arguments": {}, "read_only": True,
                                 "witness": "w", "argumnets": {"path": "x"}}),
            ("/v1/fak/admit", {"tool": "fetch", "result": "", "tool_call_id": "c1"}),
        ],
    )  # fmt: skip
    # the result sent under another key is neither admitted as "{}" nor echoed back
    assert content.status_code == 400 and content.json()["error"]["code"] == "unknown_field"
    assert content.json()["error"]["param"] == "content" and SECRET not in content.text
    assert no_result.status_code == 400
    assert no_result.json()["error"]["code"] == "missing_result"
    assert extra.json()["error"]["param"] == "mode"
    assert syscall_extra.json()["error"]["param"] == "argumnets"
    assert empty.status_code == 200 and empty.json()["verdict"]["kind"] == "ALLOW"


def test_syscall_runs_a_registered_tool_and_screens_its_result(
    app_factory: Callable[..., Any],
) -> None:
    kernel = Kernel(Policy.default())
    kernel.register_tool(
        "read_file", lambda args: {"text": "hello " + str(args.get("path"))}, read_only=True
    )
    kernel.register_tool("get_token", lambda args: "the token is " + SECRET)
    app = app_factory(MockPlanner(), kernel=kernel)
    ok, held, denied = post_all(
        app,
        [
            ("/v1/fak/syscall", {"tool": "read_file", "arguments": {"path": "x"}}),
            ("/v1/fak/syscall", {"tool": "get_token", "arguments": {}}),
            ("/v1/fak/syscall", {"tool": "delete_account", "arguments": {}}),
        ],
    )
    assert ok.json()["result"]["status"] == "ok"
    assert ok.json()["result"]["content"] == '{"text":"hello x"}'
    body = held.json()
    assert body["verdict"]["kind"] == "QUARANTINE" and body["verdict"]["reason"] == "SECRET_EXFIL"
    assert SECRET not in held.text and body["result"]["quarantine_id"]
    assert denied.status_code == 200 and denied.json()["verdict"]["kind"] == "DENY"


def test_admit_screens_a_client_result(app_factory: Callable[..., Any]) -> None:
    app = app_factory(MockPlanner())
    clean, poisoned, as_object = post_all(
        app,
        [
            ("/v1/fak/admit", {"tool": "read_file", "result": "all good"}),
            ("/v1/fak/admit", {"tool": "read_file", "result": "key " + SECRET}),
            ("/v1/fak/admit", {"tool": "read_file", "result": {"rows": [1, 2]}}),
        ],
    )
    assert clean.json()["verdict"]["kind"] == "ALLOW" and clean.json()["content"] == "all good"
    p = poisoned.json()
    assert p["verdict"]["kind"] == "QUARANTINE" and SECRET not in poisoned.text
    assert p["content"].startswith('{"_quarantined":true') and p["quarantine_id"]
    assert as_object.json()["content"] == '{"rows":[1,2]}'


def test_policy_reload_replaces_never_merges(
    app_factory: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "floor.json"
    path.write_text('{"version": "fak-policy/v1", "allow": ["send_email"]}')

    def reloader() -> tuple[Any, dict[str, Any]]:
        policy = Policy.load(path)
        return policy, policy.summary()

    app = app_factory(MockPlanner(), policy_reloader=reloader, policy_source=str(path))
    check = {"tool": "send_email", "arguments": {}}
    read = {"tool": "read_file", "arguments": {"path": "a"}}
    before, reloaded, allowed, read_now = post_all(
        app,
        [
            ("/v1/fak/adjudicate", check),
            ("/v1/fak/policy/reload", None),
            ("/v1/fak/adjudicate", check),
            ("/v1/fak/adjudicate", read),
        ],
    )
    assert before.json()["verdict"]["kind"] == "DENY"
    assert reloaded.status_code == 200
    assert reloaded.json()["reloaded"] is True and reloaded.json()["source"] == str(path)
    assert allowed.json()["verdict"]["kind"] == "ALLOW"
    assert (
        read_now.json()["verdict"]["kind"] == "DENY"
    )  # replaced: the default floor's read_ is gone
    path.write_text('{"version": "fak-policy/v1", "allows": ["x"]}')
    bad, still = post_all(app, [("/v1/fak/policy/reload", None), ("/v1/fak/adjudicate", check)])
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "policy_reload_failed"
    assert "allows" in bad.json()["error"]["message"]
    assert still.json()["verdict"]["kind"] == "ALLOW"  # the old floor is untouched


def test_policy_reload_without_a_policy_is_404(app_factory: Callable[..., Any]) -> None:
    [r] = post_all(app_factory(MockPlanner()), [("/v1/fak/policy/reload", None)])
    assert r.status_code == 404


def test_events_404_without_a_journal_and_rows_with_one(
    app_factory: Callable[..., Any], tmp_path: Path
) -> None:
    async def get(app: Any, q: str = "") -> Any:
        async with asgi_client(app) as c:
            return await c.get("/v1/fak/events" + q)

    assert asyncio.run(get(app_factory(MockPlanner()))).status_code == 404
    from fak.journal import Journal

    path = tmp_path / "journal.jsonl"
    kernel = Kernel(Policy.default(), journal=Journal(str(path)))
    app = app_factory(MockPlanner(), kernel=kernel, events=file_events(str(path)))
    post_all(
        app,
        [
            ("/v1/fak/adjudicate", {"tool": "read_file", "arguments": {"path": "a"}}),
            ("/v1/fak/adjudicate", {"tool": "delete_account", "arguments": {}}),
        ],
    )
    body = asyncio.run(get(app)).json()
    assert [(e["kind"], e["tool"]) for e in body["events"]] == [
        ("DECIDE", "read_file"),
        ("DENY", "delete_account"),
    ]
    assert body["cursor"] == 2
    assert asyncio.run(get(app, "?since=1")).json()["events"][0]["seq"] == 2
    assert "hunter" not in path.read_text()


@pytest.mark.parametrize(
    "query", ["?since=-5", f"?since={10**23}", "?since=abc", "?limit=x", "?since=" + "9" * 30]
)
def test_E1_a_bad_events_cursor_is_a_400_with_a_code(
    app_factory: Callable[..., Any], tmp_path: Path, query: str
) -> None:
    from fak.journal import Journal

    path = tmp_path / "journal.jsonl"
    kernel = Kernel(Policy.default(), journal=Journal(str(path)))
    app = app_factory(MockPlanner(), kernel=kernel, events=file_events(str(path)))
    post_all(app, [("/v1/fak/adjudicate", {"tool": "read_file", "arguments": {"path": "a"}})])

    async def get() -> Any:
        async with asgi_client(app) as c:
            return await c.get("/v1/fak/events" + query)

    r = asyncio.run(get())
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_cursor"


def test_N8_adjudicate_takes_the_run_context_and_judges_its_absence_as_the_worst_case(
    app_factory: Callable[..., Any],
) -> None:
    import json

    manifest = {
        "allow": ["update_password", "get_webpage"],
        "after_untrusted": {"update_password": "deny"},
    }
    kernel = Kernel(Policy.loads(json.dumps(manifest), source="<test>"))
    app = app_factory(MockPlanner(), kernel=kernel)
    call = {"tool": "update_password", "arguments": {"password": "x"}}
    clean = {"user": ["change my password"], "results": []}
    dirty = {"user": ["change my password"], "results": [{"tool": "get_webpage", "text": "hi"}]}

    async def ask(body: dict[str, Any]) -> Any:
        async with asgi_client(app) as c:
            return await c.post("/v1/fak/adjudicate", json=body)

    kinds = [
        asyncio.run(ask({**call, **extra})).json()["verdict"]["kind"]
        for extra in ({}, {"context": clean}, {"context": dirty})
    ]
    assert kinds == ["DENY", "ALLOW", "DENY"]
    bad = asyncio.run(ask({**call, "context": {"user": "not a list"}}))
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_context"
