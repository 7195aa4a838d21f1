"""``allow_hosts``: an arg rule that admits a URL only when its parsed host is listed."""

from __future__ import annotations

import json

import pytest

from fak.abi import ToolCall, VerdictKind
from fak.policy import Policy, PolicyError
from fak.policy.argrules import host_listed, url_host

HOSTS = ("docs.python.org", "*.readthedocs.io")


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://docs.python.org/3/", "docs.python.org"),
        ("HTTPS://Docs.Python.ORG./x", "docs.python.org"),
        ("https://docs.python.org:443/x?y#z", "docs.python.org"),
        ("https://bücher.example/", "xn--bcher-kva.example"),
        ("http://[::1]/", "::1"),
        # parsers disagree on these, so none of them is a host at all
        ("https://evil.example\\@docs.python.org/", None),
        ("https://docs.python.org@evil.example/", None),
        ("https://user:pw@docs.python.org/", None),
        ("https://docs.python.org /x", None),
        ("https://docs.python.org\t/x", None),
        ("https://docs.python.org:99999/", None),
        ("file:///etc/passwd", None),
        ("ftp://docs.python.org/", None),
        ("docs.python.org/3/", None),
        ("https:///x", None),
        ("", None),
    ],
)
def test_url_host_reads_what_a_client_would_connect_to(url: str, host: str | None) -> None:
    assert url_host(url) == host


@pytest.mark.parametrize(
    ("host", "listed"),
    [
        ("docs.python.org", True),
        ("requests.readthedocs.io", True),
        ("a.b.readthedocs.io", True),
        ("readthedocs.io", False),  # *. means subdomains only
        ("evilreadthedocs.io", False),
        ("python.org", False),
        ("docs.python.org.evil.example", False),
    ],
)
def test_host_listed(host: str, listed: bool) -> None:
    assert host_listed(host, HOSTS) is listed


def _policy(rule: dict[str, object]) -> Policy:
    return Policy.loads(json.dumps({"allow": ["fetch"], "arg_rules": [rule]}))


def test_the_rule_refuses_unlisted_or_unparseable_urls_and_names_itself() -> None:
    policy = _policy({"tool": "fetch", "arg": "url", "allow_hosts": list(HOSTS)})
    from fak.kernel import Kernel

    kernel = Kernel(policy)
    ok = kernel.decide(ToolCall("fetch", {"url": "https://docs.python.org/3/"}))
    assert ok.kind is VerdictKind.ALLOW
    for url in ("https://evil.example/", "not a url", None):
        verdict = kernel.decide(ToolCall("fetch", {"url": url} if url else {}))
        assert verdict.kind is VerdictKind.DENY
        assert "fetch.url allow_hosts [docs.python.org, *.readthedocs.io]" in verdict.claim


@pytest.mark.parametrize(
    "hosts",
    [[], ["Docs.python.org"], ["docs.python.org/"], ["*"], ["*.*.example"], ["a..b"], ["-a.b"]],
)
def test_a_bad_host_list_is_a_policy_error(hosts: list[str]) -> None:
    with pytest.raises(PolicyError):
        _policy({"tool": "fetch", "arg": "url", "allow_hosts": hosts})


def test_allow_hosts_is_one_matcher_among_the_others() -> None:
    with pytest.raises(PolicyError) as info:
        _policy({"tool": "fetch", "arg": "url", "allow_hosts": ["a.b"], "max_bytes": 9})
    assert "exactly one of allow_glob, allow_hosts" in str(info.value.problems[0])
