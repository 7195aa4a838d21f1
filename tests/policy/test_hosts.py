"""``fak.policy.hosts``: hosts, e-mail addresses and links in the normal form sinks and
allow-lists compare (UTS #46 / IDNA 2008 via ``idna``; the Public Suffix List)."""

from __future__ import annotations

import idna
from hypothesis import given, settings
from hypothesis import strategies as st

from fak.policy.hosts import email_address, links, normal_host, registrable_domain, url_host


def test_N4_normal_host_is_uts46_nontransitional() -> None:
    assert normal_host("straße.de") == "xn--strae-oqa.de"
    assert normal_host("strasse.de") == "strasse.de"
    assert normal_host("Docs.Espressif.COM.") == "docs.espressif.com"
    assert normal_host("ｅｘａｍｐｌｅ。com") == "example.com"  # full-width, ideographic stop
    assert normal_host("2130706433") == "127.0.0.1"
    assert normal_host("0x7f.1") == "127.0.0.1"
    assert normal_host("[::1]") == "::1"
    for bad in ("a..b", "-a.example", "ab--c.example", "1.2.3.999", "", "a b", "a_b-.example"):
        assert normal_host(bad) is None
    assert url_host("https://docs.espreßif.com/") == "docs.xn--espreif-4va.com"


@settings(max_examples=300, deadline=None)
@given(st.from_regex(r"[A-Za-z0-9\-]{1,12}(\.[A-Za-z0-9\-]{1,12}){0,3}\.?", fullmatch=True))
def test_the_ascii_fast_path_agrees_with_idna(name: str) -> None:
    bare = name.removesuffix(".")
    last = bare.rsplit(".", 1)[-1]
    if last.isdigit() or last.lower().startswith("0x"):
        return  # an address, not a name
    try:
        want: str | None = idna.encode(bare, uts46=True, std3_rules=True).decode().lower()
    except idna.IDNAError:
        want = None
    assert normal_host(name) == want


def test_N5_registrable_domains_come_from_the_public_suffix_list() -> None:
    assert registrable_domain("www.acme.co.uk") == "acme.co.uk"
    assert registrable_domain("acme.co") == "acme.co"
    assert registrable_domain("co.uk") is None
    assert registrable_domain("alice.github.io") == "alice.github.io"  # private section
    assert registrable_domain("1.2.3.4") is None


def test_N6_links_finds_what_the_old_tld_table_missed() -> None:
    text = "a bit.ly/x b evil.zip. c 1.2.3.4/x d https://x.example/p?q=1 e main.txt f 3.14"
    assert list(links(text)) == ["bit.ly/x", "evil.zip", "1.2.3.4/x", "https://x.example/p?q=1"]


def test_email_address_normal_form() -> None:
    assert email_address("Bob <BOB@Straße.DE>") == ("bob", "xn--strae-oqa.de")
    assert email_address("bob@strasse.de") == ("bob", "strasse.de")
    for bad in ("a@b@c.example", "bob@[1.2.3.4]", "bob@x.example.", "bob@x.example:25", "bob"):
        assert email_address(bad) is None


def test_a_label_with_an_underscore_is_a_host_as_browsers_read_it() -> None:
    """AgentDyn's users type ``www.resume_templates.com``: DNS and every URL parser take it, so
    it has a normal form (a label with ``_`` kept as written, lower-cased), distinct from the
    names it resembles; the other labels still take UTS #46."""
    assert normal_host("www.Resume_Templates.com") == "www.resume_templates.com"
    assert normal_host("_dmarc.example.com") == "_dmarc.example.com"
    assert normal_host("a_b.straße.de") == "a_b.xn--strae-oqa.de"
    assert normal_host("a_b.example") not in (normal_host("ab.example"), normal_host("a-b.example"))
    assert url_host("https://www.resume_templates.com/cv") == "www.resume_templates.com"
    assert registrable_domain("www.resume_templates.com") == "resume_templates.com"
    assert list(links("see evil_site.com/x now")) == ["evil_site.com/x"]  # still judged
    for bad in ("a_b..example", "_.ex ample", "a_" + "b" * 70 + ".example"):
        assert normal_host(bad) is None
