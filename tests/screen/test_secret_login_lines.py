"""Passwords in the line shapes of everyday tools (``fak.screen.secret_logins``): PHP's
``define('DB_PASSWORD', '…')`` (wp-config.php), a ``.pgpass`` line, Redis's ``requirepass`` /
``masterauth``, a MySQL client's ``-p<password>``, ``sshpass -p``, and a session cookie in a
``Cookie`` / ``Set-Cookie`` header. Before this, each reached the model. Each look-alike below
(a placeholder, a flag, a timestamp, a cookie that holds no session) passes. The values are
made up."""

from __future__ import annotations

import json

import pytest

from fak.screen.secrets import find_secrets

PW = "Zq8vN2kLx4PwR7tY"
TOKEN = "Zq8vN2kLx4PwR7tYb3HsGhQeGp5QkZ2a"

# (text, the held value)
HELD = {
    "wp-config password": (f"define( 'DB_PASSWORD', '{PW}' );", PW),
    "wp-config salt": (f'define("AUTH_SALT", "{TOKEN}");', TOKEN),
    "pgpass": (f"db.internal:5432:orders:app:{PW}\n", PW),
    "pgpass any port": (f"localhost:*:*:postgres:{PW}", PW),
    "pgpass among lines": (f"# ~/.pgpass\n*:5432:*:replica:{PW}\r\nnext", PW),
    "redis requirepass": (f"bind 127.0.0.1\nrequirepass {PW}\nport 6379\n", PW),
    "redis masterauth quoted": (f'masterauth "{PW}"\n', PW),
    "mysql -p": (f"$ mysql -h db -u root -p{PW} orders\n", PW),
    "mysqldump -p": (f"mysqldump --single-transaction -uroot -p{PW} shop > shop.sql", PW),
    "sshpass": (f"sshpass -p '{PW}' ssh deploy@10.0.0.5 uptime\n", PW),
    "cookie header": (f"Host: app\nCookie: theme=dark; sessionid={TOKEN}; lang=en\n", TOKEN),
    "set-cookie": (f"Set-Cookie: auth_token={TOKEN}; Path=/; HttpOnly\n", TOKEN),
    "cookie in json headers": (json.dumps({"headers": {"Cookie": f"connect.sid={TOKEN}"}}), TOKEN),
}


@pytest.mark.parametrize("case", sorted(HELD))
def test_each_line_shape_is_held(case: str) -> None:
    text, value = HELD[case]
    hits = find_secrets(text.encode())
    assert hits and hits[0].kind == "login_pair", case  # ``auth_token=`` is an assignment too
    assert text.encode()[hits[0].start : hits[0].end] == value.encode(), case


PASSES = {
    "wp-config placeholder": "define( 'DB_PASSWORD', 'password_here' );",
    "define of a name": "define('SECRET_KEY_LENGTH', 64);",
    "pgpass placeholder": "hostname:port:database:username:password",
    "pgpass doc line": "*:*:*:postgres:<password>",
    "a clock, not a pgpass line": "12:30:45:123:456",
    "mac address": "00:1a:2b:3c:4d:5e",
    "redis placeholder": "requirepass foobared\n",
    "redis in prose": "Set requirepass to a long random string.",
    "mysql asks for the password": "mysql -u root -p\nEnter password:",
    "mysql -p then a flag": "mysql -u root -p --host db",
    "sshpass from a file": "sshpass -f ~/.pw ssh host",
    "sshpass from the environment": "SSHPASS=$PW sshpass -e ssh host",
    "cookie without a session": f"Cookie: theme=dark; _ga=GA1.2.{TOKEN}; lang=en",
    "short session id": "Set-Cookie: sessionid=abc123; Path=/",
    "cookie in prose": "The cookie: it keeps you signed in.",
}


@pytest.mark.parametrize("case", sorted(PASSES))
def test_look_alikes_pass(case: str) -> None:
    assert find_secrets(PASSES[case].encode()) == [], case
