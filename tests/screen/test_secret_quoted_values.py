"""A secret-named key assigned a quoted value with brackets or ``=`` in it (Django's
``SECRET_KEY`` alphabet has ``(``, ``)``, ``=``): the value is read to its closing quote. A key
that also holds ``$`` is still refused (``$`` reads as a template), as is one with ``=`` in its
first eight characters (the RE2 candidate wants eight value characters before it). Before,
the value reader stopped at the bracket and the assignment rule refused the value as code. Code,
templates and prose in the same position still pass. The values are made up."""

from __future__ import annotations

import pytest

from fak.screen.secrets import find_secrets

DJANGO = "zq8v#n2k(lx4pwr7tyb3hs)ghqegp5qkz2a2xxnfb3ujdu^w1"
INSECURE = f"django-insecure-{DJANGO}"

HELD = {
    "django settings": (f"SECRET_KEY = '{DJANGO}'\n", DJANGO),
    "django insecure prefix": (f"SECRET_KEY = '{INSECURE}'", INSECURE),
    "double quotes": (f'SECRET_KEY = "{DJANGO}"', DJANGO),
    "flask": ("app.secret_key = 'Zq8v#N2k(Lx4)pwR7'", "Zq8v#N2k(Lx4)pwR7"),
    "equals inside": ("DB_PASSWORD='Zq8vN2kL=x4PwR7tY(b3)'", "Zq8vN2kL=x4PwR7tY(b3)"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HELD))
def test_a_quoted_secret_with_brackets_is_read_to_its_quote(case: str) -> None:
    text, value = HELD[case]
    hits = find_secrets(text.encode())
    assert [h.kind for h in hits] == ["assignment"], case
    assert text.encode()[hits[0].start : hits[0].end] == value.encode(), case


PASSES = (
    "SECRET_KEY = os.environ.get('SECRET_KEY')",
    "SECRET_KEY = get_secret('django(key)')",
    "password = 'Enter (min 8 chars)'",
    "TOKEN_RE = r'(?P<tok>[a-z]{40})'",
    "token = '%(token)s(%(user)s)'",
    "SECRET = '${SECRET}(fallback)'",
    'api_key = f"{prefix}(abcdefgh)"',
    "secret = 'abc(def)' + suffix",
    "PASSWORD = 'x=y'",
)


@pytest.mark.parametrize("text", PASSES)
def test_code_templates_and_prose_in_quotes_pass(text: str) -> None:
    assert find_secrets(text.encode()) == [], text
