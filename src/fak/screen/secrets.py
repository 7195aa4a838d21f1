"""Credential detectors with each format's real structure (tier T1).

One RE2 pass (Latin-1 mode, linear, no backtracking) finds every place a credential format could
start; each candidate is then validated in Python on a bounded window: fixed prefixes and
lengths, alphabets, GitHub's CRC32 tail, a JWT header that decodes to JSON naming an ``alg``,
PEM armour around a private key, a password beside its user (URL user-info, curl's ``-u``,
.netrc, SQL, npm's base64 ``_auth``), and an entropy test for generic ``api_key=`` /
``secret:`` / ``Authorization: Bearer`` assignments. Documentation placeholders and masked
values (``sk-...``, ``<YOUR_KEY>``, ``xxxx``, ``AKIAIOSFODNN7EXAMPLE``, ``${VAR}``) are not
secrets. How a value is judged lives in ``fak.screen.secret_values``; vendor tokens are judged
in ``fak.screen.secret_vendors``. Pure; a hit carries a byte span, never the bytes.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import re2

from fak.screen.rx import Find, matcher
from fak.screen.secret_keys import KEY_FORMS, der_key, jwk_key, putty_key, xml_key
from fak.screen.secret_logins import base64_pair, login_pair, password_ok
from fak.screen.secret_prefixes import PREFIXED_ANY, PREFIXED_RE2
from fak.screen.secret_values import BASE64_CHARS as _BASE64_CHARS
from fak.screen.secret_values import TOKEN_CHARS as _TOKEN_CHARS
from fak.screen.secret_values import TYPED as _TYPED
from fak.screen.secret_values import alnum_kinds as _alnum_kinds
from fak.screen.secret_values import annotation as _annotation
from fak.screen.secret_values import clean_start as _clean_start
from fak.screen.secret_values import credential_value as _credential_value
from fak.screen.secret_values import entropy as _entropy
from fak.screen.secret_values import is_placeholder
from fak.screen.secret_values import quoted_literal_end as _quoted_literal_end
from fak.screen.secret_values import random_looking as _random_looking
from fak.screen.secret_values import token_end as _token_end
from fak.screen.secret_values import value_at as _value_at
from fak.screen.secret_values import value_start as _value_start
from fak.screen.secret_vendors import vendor_token as _vendor_token
from fak.screen.tokens import BIG_DFA, Naming, compile_latin1

__all__ = [
    "SECRET_FIND",
    "SECRET_KINDS",
    "SECRET_PREFILTER",
    "SecretHit",
    "candidate_at",
    "find_scanner",
    "find_secrets",
    "is_placeholder",
    "secret_candidates",
    "validate_candidates",
]


@dataclass(frozen=True, slots=True)
class SecretHit:
    """A validated credential: its kind and its [start, end) byte span in the scanned text."""

    kind: str
    start: int
    end: int


_B62 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# The words that make a key secret-named (RE2 and ``re`` read them alike)
_SECRET_WORDS = (
    rb"api[_-]?key|apikey|secret|passw(?:or)?d|passwd|pwd|access[_-]?key"
    rb"|token|private[_-]?key|credential"
    # WireGuard's pre-shared key, ASP.NET's machine keys, Rails' master key
    rb"|preshared[_-]?key|validationkey|decryptionkey|master[_-]?key"
    # a passphrase; ``_PASS`` ending an environment variable's name (``DB_PASS``, ``SMTP_PASS``;
    # upper case only: ``pass`` / ``p90_pass`` in code are booleans; not ``DB_PASS_FILE``)
    rb"|passphrase|(?-i:_PASS)\b"
)

# (kind, RE2 source). Each alternative is one capturing group, so ``lastindex`` names the kind.


# Lengths are minimums: the validators read the whole token from the match on.
_FORMATS: tuple[tuple[str, bytes], ...] = (
    ("openai_key", rb"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40}"),
    # API / admin keys, OAuth access and refresh tokens (``oat`` / ``ort``)
    ("anthropic_key", rb"sk-ant-(?:api|admin|oat|ort)[0-9]{2,3}-[A-Za-z0-9_-]{40}"),
    # a legacy key, or any key holding OpenAI's base64 marker (``T3BlbkFJ``)
    ("openai_legacy", rb"sk-(?:[A-Za-z0-9]{20}|[A-Za-z0-9_-]*T3BlbkFJ)"),
    # key ids are base32 (A-Z, 2-7); fixtures and docs write any digit, scanners accept it
    ("aws_key_id", rb"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    # a classic token, or an app installation token holding a JWT (``ghs_<app id>_eyJ…``)
    ("github_token", rb"gh[pousr]_(?:[A-Za-z0-9_]{36}\b|[0-9]{1,12}_eyJ)"),
    ("github_pat", rb"github_pat_[A-Za-z0-9_]{82}\b"),  # 22 + ``_`` + 59; scanners: any 82
    ("google_api_key", rb"AIza[0-9A-Za-z_-]{35}"),
    ("stripe_key", rb"[rs]k_(?:live|test|prod)_[0-9A-Za-z]{24}"),
    ("slack_token", rb"(?:xox[abposrecd]|xapp)-[0-9A-Za-z-]{10}"),  # c, d: session tokens
    # incoming webhooks, and Workflow Builder's webhooks (``workflows/``) and triggers
    # (``triggers/<team>/<trigger id>/<secret>``): whoever holds the URL can post or run the flow
    ("slack_webhook",
     rb"hooks\.slack\.com/(?:services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/"
     rb"|workflows/[TE][A-Za-z0-9_]+/A[A-Za-z0-9_]+/[0-9]+/|triggers/[TE][A-Za-z0-9_]+/[0-9]+/)"
     rb"[A-Za-z0-9_]{20}"),
    ("jwt", rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16}"),
    # PEM armour, or the armour in base64 (``LS0tLS1CRUdJTi`` is ``-----BEGIN``: a kubeconfig's
    # ``client-key-data``, a Kubernetes secret's ``tls.key``; at a word's start or after a string
    # escape, so no automaton thread starts inside a base64 run)
    # (the commercial SSH's and OpenVPN's armour too); then the forms without armour
    # (``secret_keys``: DER in base64, a JSON Web Key's private member, PuTTY, .NET's XML)
    ("private_key",
     rb"(?i:-----begin [a-z0-9 ]*private key(?: block)?-----"
     rb"|---- begin ssh2 (?:encrypted )?private key ----|-----begin openvpn static key v[0-9]-----)"
     rb"|(?:\b|\\[nrt])LS0tLS1CRUdJTi[A-Za-z0-9+/]{16}|" + KEY_FORMS),
    # 22 + ``.`` + 43 in SendGrid's keys; the scanners' rules accept any run: the validator
    # wants 20 characters mixing letters and digits
    ("sendgrid_key", rb"SG\.[A-Za-z0-9_=-][A-Za-z0-9_.=-]{19}"),
    ("gitlab_token",  # personal, deploy, feed, OAuth, runner, CI-job, ... tokens
     rb"(?:gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|ffct)-|GR1348941)[A-Za-z0-9_-]{20}"),
    ("huggingface_token", rb"hf_[A-Za-z0-9]{34}\b"),
    ("npm_token", rb"npm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", rb"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50}"),  # test.pypi
    ("artifactory_key", rb"AKCp[A-Za-z0-9]{10}"),  # JFrog API keys; a bare AKC slows the DFA
    ("square_token", rb"sq0(?:csp|atp)-[0-9A-Za-z_-]{22}"),
    ("twilio_key", rb"(?:AC|SK)(?:[a-z0-9]{32}|[0-9a-fA-F]{32})\b"),
    ("telegram_bot_token", rb"[0-9]{5,16}:[0-9A-Za-z_-]{30}"),  # bot id, then 35 (scanners: 30+)
    ("digitalocean_token", rb"do[oprt]_v1_[a-f0-9]{64}"),
    ("azure_storage_key", rb"(?i:accountkey)=[A-Za-z0-9+/]{40}"),
    # vendor prefixes (whispers' known-key list, then ``secret_prefixes``) at a word's start or
    # after a string escape (``\\n``: as the validator's ``_clean_start``; in the automaton, no
    # thread starts inside a base64 run), then a token (vendors' alphabets differ: any token
    # character; the validator judges the randomness). Terraform Cloud's and FCM's random
    # part comes first: matched at the marker, read back. One group: every group added slows the
    # per-match submatch pass on candidate-dense text (``key=key=key=``)
    ("vendor_token",
     rb"(?:\b|\\[nrt])(?:CFPAT-?|CLOJARS_?|dp\.(?:pt|ct|st|sa|scim|audit)\.|dt0c01\.|EAACEdEose0cBA"
     rb"|FLWSECK(?:_TEST)?-|fio-u-|glsa_|glc_|eyJrIjoi|lin_(?:api|oauth)_"
     rb"|NR(?:AA|AK|II|IQ|JS|RA|SP)-|PMAK-|whsec_|amzn\.mws\.|(?i:sk\.eyj1ijoi)|akab-?|"
     + PREFIXED_RE2  # llm-guard's, trufflehog3's and betterleaks' prefixes (issue 25)
     + rb")[A-Za-z0-9_.=+/-]{12}"
     rb"|(?:\.atlasv1\.|:APA91b)[A-Za-z0-9_.=+/-]{12}"
     # Discord bot tokens: the bot's user id (17-20 digits) in base64, a timestamp, an HMAC
     rb"|(?:\b|\\[nrt])[MNO][DTjz][A-Za-z0-9_-]{21,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}"
     # Azure's identifiable keys: a service's signature at a fixed offset (read back)
     rb"|(?:JQQJ|\+A(?:Rm|Eh|Sb|St|Ba|MC|CR)|AIoT|AzCa|AZEG|AzSe|AzFu|ACDb|APIM)[A-Za-z0-9+/_-]{5}"
     rb"|[78]Q~[A-Za-z0-9._~-]{12}"
     rb"|(?:discord(?:app)?\.com/api/webhooks/[0-9]+/|hooks\.zapier\.com/hooks/catch/[0-9]+/"
     rb"|outlook\.office\.com/webhook/|webhook\.office\.com/webhookb2/)[A-Za-z0-9_@-]{6}"
     rb"|-us[0-9]{1,2}\b"),  # Mailchimp: 32 hex, then the data centre; read back
    # a password beside its user: scheme://user:password@host (the user may be empty,
    # ``redis://:password@host``, or a token with no password, ``https://<token>:@host``;
    # unbounded classes keep RE2's automaton small, the validator bounds the lengths); and, a
    # kind of its own (``login_pair``), Oracle's thin JDBC ``user/password@``; curl's ``-u`` /
    # ``--user`` / ``--proxy-user``
    # ``user:password`` (the match stops at the colon: read on below); a command's ``--password
    # <value>`` (PowerShell's ``-Password``) or ``--token`` / ``--api-key`` / ``--bootstrap-token``
    # … value; a .netrc entry (``machine h login u password p``, JSON-escaped lines too); SQL's
    # ``IDENTIFIED BY '…'`` / ``WITH PASSWORD '…'`` (upper case: "with password 'x'" is prose)
    ("url_credentials", rb"://[^\s:/@'\"<>]*:[^\s/@'\"<>]*@[A-Za-z0-9.\[-]"),
    ("login_pair",
     rb"jdbc:oracle:thin:[^\s:/@'\"<>]+/[^\s/@'\"<>]+@"
     rb"|\s(?:-u|--user|-U|--proxy-user)(?:[ \t]+|=)[\"']?[^\s:'\"<>]*:"
     rb"|\s(?i:--?(?:[a-z0-9]+-)*(?:passw(?:or)?d|token|secret|api-?key))[ \t]+"
     rb"|(?i:(?:\b|\\[nrt])machine(?:\s|\\[nrt])+\S+(?:\s|\\[nrt])+login(?:\s|\\[nrt])+\S+(?:\s|\\[nrt])+password)"
     rb"(?:\s|\\[nrt])+"
     rb"|(?:(?i:\bidentified(?:\s+with\s+[a-z0-9_]+)?\s+by)"
     rb"|\bWITH\s+(?:LOGIN\s+)?(?:ENCRYPTED\s+)?PASSWORD)\s+\\?'"
     # (read in ``secret_logins``) PHP's ``define('DB_PASSWORD', '…')``; a .pgpass line
     # (``host:port:db:user:password``); Redis's ``requirepass`` / ``masterauth``; a MySQL
     # client's ``-p<password>``; ``sshpass -p``; a session cookie in a ``Cookie`` header
     rb"|(?i:\bdefine\([ \t]*[\"'][a-z0-9_]*(?:passw(?:or)?d|secret|_key|_salt|token)[a-z0-9_]*"
     rb"[\"'][ \t]*,[ \t]*[\"'])"
     rb"|(?m:^)[A-Za-z0-9.*_-]+:(?:[0-9]{2,5}|\*):[^:\s]+:[^:\s]+:[^:\s]"
     rb"|(?m:^)[ \t]*(?:requirepass|masterauth)[ \t]+[^\s]"
     rb"|\bmysql(?:dump|admin|import|show|check)?[ \t][^\n]*[ \t]-p[^\s]"
     rb"|\bsshpass[ \t]+-p[ \t]*[^\s]"
     rb"|(?i:\b(?:set-)?cookie\\?[\"']?[ \t]*:)"),
    # schemes: OAuth's, Elastic's ``ApiKey``, GoDaddy's ``sso-key``, Okta's ``SSWS``, DeepL's
    # the header as a line, a JSON member or a dict item (``"Authorization": "Basic …"``,
    # ``headers['Authorization'] = '…'``, escaped in a JSON string too)
    ("auth_header",
     rb"(?i:authorization\\?[\"']?\]?\s*[:=]\s*\\?[\"']?"
     rb"(?:(?:bearer|token|basic|apikey|sso-key|ssws|oauth|deepl-auth-key)\s+"
     # or the key itself, no scheme (SparkPost's, Checkout.com's ``Authorization: sk_…``)
     rb"|[A-Za-z0-9_-]{20}))"),
    ("bearer", rb"(?i:\bbearer\s+)[A-Za-z0-9_~+/.=-]{20}"),
    # a secret-named key assigned a value: KEY=..., "key": "...", key: ...; npm's ``_auth``
    # (a word of its own: ``SERVICE_AUTH=`` must not hide a key named in its value) and a
    # Docker config's ``"auth"`` (both base64 ``user:password``)
    (
        "assignment",
        rb"(?i:(?:" + _SECRET_WORDS + rb"|\b_auth|\"auth\\?\")"
        rb"[a-z0-9_.-]{0,40}\\*[\"']?[ \t]*(?:=|:" + _TYPED + rb"|:=|=>)[ \t]*)"
        rb"\\*[\"'`]?[^\s\"'`,;)\]}<>|\\=]{8}"
        # a name that only ends in ``key`` / ``api`` / ``auth`` / ``pat`` (a personal access
        # token: ``deepgram_key``, ``ollama key``, ``deepgram-api``, ``wiki_PAT``): code names
        # ordinary values so too (``cache_key``, ``sort_key``), so the value must say
        # "credential" on its own (20+ characters here; ``secret_values.credential_value``)
        rb"|(?i:[a-z0-9][ _.-]?(?:key|api|auth|pat)\\*[\"']?[ \t]*(?:=|:" + _TYPED + rb"|:=|=>)"
        rb"[ \t]*)"
        rb"\\*[\"'`]?[^\s\"'`,;)\]}<>|\\=]{20}"
        # a secret's name, a space, the value: ``eventbrite private access key ZXC…``, ``owlbot
        # SECRET b7d2…`` (no operator: the value must be a credential on its own, see ``_spaced``)
        rb"|(?i:(?:(?:api|access|secret|private|auth)[ _-]?key|secret|token)[ \t]+)"
        rb"[A-Za-z0-9_-]{20}",
    ),
)  # fmt: skip

SECRET_KINDS: tuple[str, ...] = tuple(kind for kind, _ in _FORMATS)
SECRET_PREFILTER: bytes = b"|".join(b"(" + src + b")" for _, src in _FORMATS)
"""RE2 source (Latin-1): matches wherever a credential format could start (one group each)."""
SECRET_FIND: bytes = b"|".join(b"(?:" + src + b")" for _, src in _FORMATS)
"""The same without groups (a find-only scan: the Python wrapper's per-match cost stays low)."""


class _Scan:
    """Per-text memo: where the next ``-----END`` is, so hostile runs of PEM headers stay linear."""

    __slots__ = ("pem_end",)

    def __init__(self) -> None:
        self.pem_end = -2  # unknown

    def next_pem_end(self, text: bytes, at: int) -> int:
        """The first ``-----END`` in [at, at + 16 KiB), or -1."""
        if self.pem_end == -2 or 0 <= self.pem_end < at:
            self.pem_end = text.find(b"-----END", at)
        found = self.pem_end
        return found if 0 <= found < at + 16384 else -1


def _github_crc_ok(body: bytes) -> bool:
    """GitHub's token tail: base62 CRC32 of the 30 random characters, six digits, 0-padded."""
    random_part, tail = body[:30], body[30:36]
    crc = binascii.crc32(random_part)
    digits = bytearray()
    while crc:
        crc, rem = divmod(crc, 62)
        digits.insert(0, _B62[rem])
    return bytes(digits).rjust(6, b"0") == tail


def _jwt_header_ok(token: bytes) -> bool:
    head = token.split(b".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(head + b"=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return raw.lstrip().startswith(b"{") and b'"alg"' in raw


# What follows an access key id inside a SigV4 credential scope (``X-Amz-Credential``, a
# presigned URL's query, an ``Authorization: AWS4-HMAC-SHA256 Credential=`` header): the date,
# region and service, ``/`` or URL-encoded. AWS documents the key id as not secret; the scope is
# in every presigned upload or download an API hands out.
_SIGV4_SCOPE = re.compile(
    rb"(?:/|%2[fF])[0-9]{8}(?:/|%2[fF])[a-z0-9-]{2,32}(?:/|%2[fF])[a-z0-9-]{1,32}(?:/|%2[fF])aws4_request"
)
_SIGV4_CREDENTIAL = re.compile(rb"(?:AKIA|ASIA)[A-Z0-9]{16}" + _SIGV4_SCOPE.pattern)

_KEY_WORDS_BENIGN = (
    b"page", b"csrf", b"xsrf", b"next", b"cursor", b"sync", b"public", b"_id", b"length", b"count",
    b"izer", b"_name", b"type", b"policy", b"expire", b"max", b"min", b"limit", b"usage", b"file",
    b"path", b"url", b"_at", b"hash", b"digest", b"version",
)  # fmt: skip


def _validate(kind: str, text: bytes, start: int, end: int, scan: _Scan) -> tuple[int, int] | None:
    """The credential's span if the candidate at [start, end) is real, else None."""
    match kind:
        case "openai_key" | "anthropic_key" | "openai_legacy" | "google_api_key" | "stripe_key":
            stop = _token_end(text, start, _TOKEN_CHARS)
            token = text[start:stop]
            body = token.split(b"-", 2)[-1] if kind != "stripe_key" else token[8:]
            if kind == "google_api_key":
                body = token[4:]
            return (start, stop) if _random_looking(body, bits=3.2) else None
        case "aws_key_id":
            token = text[start:end]
            if _SIGV4_SCOPE.match(text, end) is not None:
                return None  # a signed request's credential scope names the key, never its secret
            return None if token.endswith(b"EXAMPLE") or is_placeholder(token) else (start, end)
        case "github_token":
            if text[end - 3 : end] == b"eyJ":  # ``ghs_<app id>_<JWT>``: the JWT decides
                head = text.index(b"_", start + 4) + 1
                stop = _token_end(text, head, _TOKEN_CHARS | {ord(".")})
                jwt = text[head:stop]
                if jwt.count(b".") != 2 or not _jwt_header_ok(jwt):
                    return None
                return None if is_placeholder(jwt.rsplit(b".", 1)[-1]) else (start, stop)
            body = text[start + 4 : end]
            if _github_crc_ok(body) or _random_looking(body, bits=3.5):
                return start, end
            return None
        case "artifactory_key" | "square_token":
            stop = _token_end(text, start, _TOKEN_CHARS)
            if _inside_base64(text, start, stop):
                return None
            body = text[start + 3 : stop] if kind == "artifactory_key" else text[start + 7 : stop]
            return (start, stop) if _random_looking(body, min_len=10, bits=3.2) else None
        case "twilio_key":
            if _inside_base64(text, start, end):
                return None
            return (start, end) if _random_looking(text[start + 2 : end], bits=3.5) else None
        case "telegram_bot_token":
            colon = text.index(b":", start)
            stop = _token_end(text, colon + 1, _TOKEN_CHARS)
            tail = text[colon + 1 : stop]
            if not 30 <= len(tail) <= 48 or _alnum_kinds(tail) < 2:
                return None  # ``1700000000:a-slug-of-words``: a timestamp and a name
            return (start, stop) if _random_looking(tail, bits=3.5) else None
        case "sendgrid_key":
            stop = _token_end(text, start, _TOKEN_CHARS | frozenset(b".="))
            body = text[start + 3 : stop].rstrip(b".")
            if len(body) < 20 or _alnum_kinds(body) < (2 if len(body) >= 60 else 3):
                return None  # ``SG.configureDefaults``: a name, not a key
            return (start, start + 3 + len(body)) if _random_looking(body, bits=3.2) else None
        case "github_pat" | "huggingface_token" | "npm_token" | "gitlab_token":
            stop = _token_end(text, start, _TOKEN_CHARS | {ord(".")})
            tail = text[start:stop][-20:]  # past every fixed prefix
            return (start, stop) if _random_looking(tail, min_len=16, bits=3.0) else None
        case "vendor_token":
            return _vendor_token(text, start, end)
        case "pypi_token" | "digitalocean_token" | "slack_webhook" | "azure_storage_key":
            stop = _token_end(text, start, _TOKEN_CHARS | frozenset(b"./+="))
            return None if is_placeholder(text[start:stop]) else (start, stop)
        case "slack_token":
            stop = _token_end(text, start, _TOKEN_CHARS)
            token = text[start:stop]
            return None if is_placeholder(token[5:]) or _entropy(token) < 3.0 else (start, stop)
        case "jwt":
            stop = _token_end(text, start, _TOKEN_CHARS | {ord(".")})
            token = text[start:stop]
            if not _jwt_header_ok(token) or is_placeholder(token.rsplit(b".", 1)[-1]):
                return None
            return start, stop
        case "private_key":
            lead = text[start + 2] if text[start] == 0x5C else text[start]  # after ``\\n``
            if lead == 0x4C:  # ``LS0t…``: base64 of the armour
                return _base64_pem(text, start)
            if lead in _KEY_FORM_LEADS:
                return _KEY_FORM_LEADS[lead](text, start)
            after = text[end : end + 80].lstrip()
            if (
                after.startswith((b"...", b"\xe2\x80\xa6"))
                or _ANGLE_WORDS.match(after)
                or any(word in after[:24].lower() for word in _PEM_PLACEHOLDERS)
            ):
                return None
            close = scan.next_pem_end(text, end)
            stop = close + 8 if close >= 0 else end
            line_end = text.find(b"-----", stop)
            return start, (line_end + 5 if close >= 0 and 0 <= line_end < stop + 64 else stop)
        case "login_pair":
            return login_pair(text, start, end)
        case "url_credentials":
            colon = text.rfind(b":", start + 3, end)
            at = text.rfind(b"@", start, end)
            password = text[colon + 1 : at]
            if colon - start > 67 or len(password) > 128:
                return None
            if not password:  # ``https://<token>:@host``: an API token as the user (Gemfury)
                user = text[start + 3 : colon]
                return (start + 3, colon) if _random_looking(user, min_len=16, bits=3.2) else None
            return (colon + 1, at) if password_ok(password) else None
        case "auth_header" if text[end - 1] not in b" \t\r\n\x0b\x0c":  # no scheme: the key
            vstart, vend = _value_at(text, end - 20)
            return (vstart, vend) if _credential_value(text[vstart:vend]) else None
        case "auth_header" | "bearer":
            vstart = end if kind == "auth_header" else text.rfind(b" ", start, end) + 1
            while vstart < len(text) and text[vstart] in b" \t":
                vstart += 1
            if text[vstart : vstart + 1] in (b"\\", b'"', b"'"):
                return None  # the scheme's string closes: ``"Bearer " + token`` (code)
            vstart, vend = _value_at(text, vstart)
            value = text[vstart:vend]
            if any(c in value for c in b"([{}$"):
                return None
            return (vstart, vend) if _random_looking(value, min_len=16, bits=3.2) else None
        case "assignment":
            key_end = _KEY_OPERATOR.match(text, start + (text[start] == 0x22))  # ``"auth"``
            vstart, vend = _value_at(text, _value_start(text, key_end.end()) if key_end else end)
            # a quoted secret with brackets or ``=`` in it (Django's keys): read to its quote
            literal_end = _quoted_literal_end(text, vstart, vend)
            vend = vend if literal_end is None else literal_end
            value = text[vstart:vend]
            if len(value) < 8 or (key_end and _annotation(text, key_end.end(), vstart, vend)):
                return None
            if _NAMED.match(text, start) is None:  # a name that only ends in ``key`` / ``api``
                return _keyed(text, start, vstart, vend)
            if text[start + 1 : start + 5].lower() == b"auth":  # ``_auth`` / ``"auth"``
                key = text[start + 1 : _token_end(text, start + 1, _KEY_CHARS, limit=48)]
                if len(key) == 4:  # base64 ``user:password`` (npm, Docker)
                    paired = base64_pair(value)
                    return (vstart, vend) if paired and password_ok(paired) else None
                if _SECRET_WORD.search(key, 4) is None:
                    return None  # ``_author``, ``_authority``: not a secret's name
            raw = text[_key_start(text, start) : vstart]
            if _BENIGN_KEY.search(raw.lower()) is not None or _MIN_MAX.search(raw) is not None:
                return None
            if literal_end is None and any(c in value for c in b"([{}$"):
                return None  # a call, an index or a template: code, not a value
            if _dotted_name(value) or _alnum_kinds(value) < 2:
                return None
            if _SIGV4_CREDENTIAL.fullmatch(value) is not None:
                return None  # ``x-amz-credential``'s value: a key id and its scope (see above)
            return (vstart, vend) if _random_looking(value, min_len=8, bits=2.8) else None
    return None


def _inside_base64(text: bytes, start: int, stop: int) -> bool:
    """A short-prefix format (``AKC``, ``AC``) inside a base64 run (a certificate, a data URI):
    ``+`` or ``/`` touches it on either side."""
    return (start > 0 and text[start - 1] in b"+/") or text[stop : stop + 1] in (b"+", b"/")


_SECRET_WORD = re.compile(_SECRET_WORDS, re.IGNORECASE)
_LOWER_DIGIT = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
# where the assignment's first alternative starts (the second starts a byte before ``key``)
_NAMED = re.compile(_SECRET_WORDS + rb"|_auth|\"auth", re.IGNORECASE)


def _keyed(text: bytes, start: int, vstart: int, vend: int) -> tuple[int, int] | None:
    """The value of a name that only ends in ``key`` / ``api`` / ``auth`` / ``pat``
    (``deepgram_key =``, ``ollama key:``, ``wiki_PAT=``) when the value is a credential on its
    own and no word of the name says digest, id, name or limit."""
    after = text[start + 1]
    if after not in b" _.-" and not (text[start] in _LOWER_DIGIT and after in b"KAP"):
        return None  # ``CLEARKEY``, ``openapi``, ``&key=``: no word ends at the suffix
    name = text[_key_start(text, start) : start + 1]
    if any(word.lower() in _NOT_SECRET_WORDS for word in _NAME_WORD.findall(name)):
        return None
    value = text[vstart:vend]
    return None if _dotted_name(value) or not _credential_value(value) else (vstart, vend)


_PEM_PRIVATE = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")


def _base64_pem(text: bytes, start: int) -> tuple[int, int] | None:
    """A PEM private key written in base64: a run that starts clean (no base64 character before
    it, so runs never overlap), decodes to the armour and is a key's length (200+ characters:
    the armour alone, in documentation, is not a key)."""
    if text[start] == 0x5C:  # after a ``\\n`` escape
        start += 2
    elif start > 0 and text[start - 1] in _BASE64_CHARS:
        return None
    stop = _token_end(text, start, _BASE64_CHARS, limit=16384)
    if stop - start < 200:
        return None
    try:
        head = base64.b64decode(text[start : start + 96], validate=True)
    except (binascii.Error, ValueError):
        return None
    stop += text[stop : stop + 2].count(b"=") if text[stop : stop + 1] == b"=" else 0
    return (start, stop) if _PEM_PRIVATE.match(head) else None


_KEY_OPERATOR = re.compile(
    rb"[A-Za-z0-9_.-]*(?: (?i:key|api|auth|pat))?\\*[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
)


# words of names ending in ``key`` whose values are digests, ids, names or limits (a git
# commit, a cache entry's hash, a row's key), matched as whole words of the name
_NOT_SECRET_WORDS = frozenset(
    b"sha sha1 sha256 hash digest checksum commit etag md5 fingerprint integrity cache sort"
    b" primary foreign partition row lookup index idempotency object bucket s3 blob node ref"
    b" parent tree i18n msg message label lang locale route order group dict map"
    b" registry license serial public pub id uuid guid name type version path file url uri"
    b" page next cursor sync csrf xsrf count length max min limit usage expire expires policy"
    b" dedupe dedup unique translation column col field data"
    # public halves and key ids: a GPG fingerprint (``GPG_KEY=7169…``), a KMS key's ARN, a
    # host's or a verifier's public key; keys their vendors put in web pages (reCAPTCHA's /
    # hCaptcha's ``siteKey``, Web Push's ``applicationServerKey``, ``publishableKey``, Adyen's /
    # Midtrans' ``clientKey``, Algolia's / Typesense's / Meilisearch's search-only keys)
    b" gpg pgp gnupg kms ssh host verify verification site server publishable client"
    b" search".split()
)
_NAME_WORD = re.compile(rb"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _key_start(text: bytes, at: int) -> int:
    """Where the identifier holding ``at`` starts (looking back at most 48 bytes)."""
    stop = max(0, at - 48)
    while at > stop and text[at - 1] in _KEY_CHARS:
        at -= 1
    return at


_BENIGN_KEY = re.compile(
    b"|".join(re.escape(w) for w in _KEY_WORDS_BENIGN if w not in (b"max", b"min"))
)
# ``max`` / ``min`` as a word of the key (``min_length``, ``maxTokens``, ``passwordMinLength``),
# not inside one (``ADMIN_PASSWORD``); read on the key as written, for camel case
_MIN_MAX = re.compile(rb"(?<![A-Za-z])(?:max|min|Max|Min|MAX|MIN)|(?<=[a-z])(?:Max|Min)")


_BOOTSTRAP_TOKEN = re.compile(rb"[a-z0-9]{6}\.[a-z0-9]{16}")


def _dotted_name(value: bytes) -> bool:
    """``settings.SECRET_KEY``, ``env.API_KEY``, ``!!r.withCredentials`` (minified code's
    boolean of a property), ``options.config?.apiKey`` (optional chaining): a reference, not a
    value (unless a part is a credential)."""
    if _BOOTSTRAP_TOKEN.fullmatch(value) is not None:
        return False  # a Kubernetes bootstrap token, ``<6>.<16>`` in lower case and digits
    parts = value.lstrip(b"!").replace(b"?.", b".").split(b".")  # ``config?.apiKey`` (JS)
    if len(parts) < 2 or not all(p[:1].isalpha() and p.replace(b"_", b"").isalnum() for p in parts):
        return False
    # two parts, the second a credential on its own: a key id and its secret (Baseten's
    # ``<8>.<32>``, Flagsmith's, Pushbullet's ``o.<32>``), not a module's attribute
    return len(parts) > 2 or not _credential_value(parts[1])


_SCAN: re2._Regexp | None = None
_FIND: re2._Regexp | None = None


def _scanner() -> re2._Regexp:
    global _SCAN
    if _SCAN is None:
        _SCAN = compile_latin1(SECRET_PREFILTER, BIG_DFA)
    return _SCAN


def find_scanner() -> re2._Regexp:
    """``SECRET_FIND`` compiled: where a credential format starts, without naming it."""
    global _FIND
    if _FIND is None:
        _FIND = compile_latin1(SECRET_FIND, BIG_DFA)
    return _FIND


@functools.cache
def _format_at() -> Find:
    """The span of the credential format starting exactly at a position (``find_scanner``)."""
    return matcher(find_scanner())


@functools.cache
def _naming() -> Naming:
    """The formats' Sets: which one a candidate at a start is (``tokens.Naming``)."""
    return Naming.of(src for _, src in _FORMATS)


def candidate_at(text: bytes, start: int) -> tuple[int, int, str] | None:
    """The credential candidate (start, end, kind) starting exactly at ``start``, if any.

    The group-free automaton says whether one starts there and where it ends (most starts a
    combined scan hands over are cues, not formats); a Set names its format. Both answer
    without the submatch engine that ``SECRET_PREFILTER``'s 29 groups need (~2x the cost)."""
    found = _format_at()(text, start)
    if found is None:
        return None
    if (first := _naming().first_at(text, start)) is not None:
        return start, found[1], SECRET_KINDS[first]
    match = _scanner().match(text, start)  # a Set that ran out of memory reports nothing
    if match is None or match.lastindex is None:
        return None
    return start, match.end(), SECRET_KINDS[match.lastindex - 1]


def find_secrets(text: bytes, *, first: bool = False) -> list[SecretHit]:
    """Every validated credential in ``text`` (only the first one with ``first=True``)."""
    return validate_candidates(text, _candidates(text), first=first)


_KEY_FORM_LEADS = {
    ord("M"): der_key, ord("3"): der_key, ord('"'): jwk_key, ord("P"): putty_key, ord("<"): xml_key
}  # fmt: skip
"""The private-key forms without armour, by their first byte (``secret_keys.KEY_FORMS``)."""
_ANGLE_WORDS = re.compile(rb"<[A-Za-z][A-Za-z0-9 _.-]{1,40}>")  # <your key here>
_PEM_PLACEHOLDERS = (b"your", b"example", b"placeholder", b"redacted", b"xxx", b"...", b"insert")
# matched inside a longer key / URL (``vendor_token`` checks its own start)
_ANYWHERE = frozenset({"assignment", "url_credentials", "login_pair", "vendor_token"})


def validate_candidates(
    text: bytes, candidates: Iterable[tuple[int, int, str]], *, first: bool = False
) -> list[SecretHit]:
    """The candidates (start, end, kind) of ``SECRET_PREFILTER`` matches that are credentials."""
    hits: list[SecretHit] = []
    looked: dict[str, int] = {}  # kind -> end of the last span validated for it
    scan = _Scan()
    for start, end, kind in candidates:
        if start < looked.get(kind, 0):
            continue  # inside a value already judged for this kind (hostile repeats stay linear)
        if (
            kind == "assignment"
            and _KEY_OPERATOR.match(text, start + (text[start] == 0x22)) is None
        ):
            spaced = _spaced(text, start, end, scan)  # ``<name> secret <value>``, no operator
            looked[kind] = end if spaced is None else spaced.end
            if spaced is not None:
                hits.append(spaced)
                if first:
                    break
            continue
        if kind == "assignment":
            # the assignment's match covers the start of its value, so a format there was not
            # matched on its own: look for one in the value first, and report its kind
            nested = _nested_format(text, start, scan)
            if nested is not None:
                hits.append(nested)
                looked[kind] = looked[nested.kind] = nested.end
                if first:
                    break
                continue
        # a match that begins at a string escape (``\\n`` before a prefix) starts a token
        clean = kind in _ANYWHERE or text[start] == 0x5C or _clean_start(text, start)
        span = _validate(kind, text, start, end, scan) if clean else None
        if kind == "auth_header" and text[end - 1] not in b" \t\r\n\x0b\x0c":
            # ``Authorization: <key>``, no scheme: a vendor's token there names the key better
            inner = _hidden_format(text, end - 21, end, scan)
            if inner is not None:
                kind, span = inner.kind, (inner.start, inner.end)
        looked[kind] = span[1] if span is not None else end
        if span is None and kind == "assignment" and _NAMED.match(text, start) is None:
            hidden = _hidden_format(text, start, end, scan)  # inside the value the match read
            if hidden is not None:
                kind, span = hidden.kind, (hidden.start, hidden.end)
        if span is not None:
            hit, last = SecretHit(kind, span[0], span[1]), hits[-1] if hits else None
            if last == hit:
                continue  # read back from inside a value's nested format: found already
            if last and last.kind == "assignment" and last.start <= span[0] < last.end:
                hits.pop()  # a format read inside an assignment's value names it better
            hits.append(hit)
            if first:
                break
    return hits


def _spaced(text: bytes, start: int, end: int, scan: _Scan) -> SecretHit | None:
    """The value after a secret's name and a space, no operator (``eventbrite private access key
    ZXC2…``, ``owlbot SECRET b7d2…``, ``customer.io api key 8363…``): a format there, or a value
    of letters, digits, ``_`` and ``-`` alone that is a credential on its own; not after a name
    of digests, ids, limits or public keys (``csrf token …``, ``site key …``) unless the name
    says secret (``Yahoo Client Secret …``)."""
    found = _hidden_format(text, end - 21, end, scan)
    if found is not None:
        return found
    vstart, vend = _value_at(text, end - 20)
    value = text[vstart:vend]
    if not value.replace(b"_", b"").replace(b"-", b"").isalnum():
        return None  # the token goes on in other characters: a path, a version, prose
    name = text[max(0, start - 24) : end - 20]
    words = _NAME_WORD.findall(name)
    if b"secret" not in text[start : end - 20].lower() and any(  # a secret names no public key
        word.lower() in _NOT_SECRET_WORDS for word in words
    ):
        return None
    return SecretHit("assignment", vstart, vend) if _credential_value(value) else None


def _hidden_format(text: bytes, start: int, end: int, scan: _Scan) -> SecretHit | None:
    """A format starting inside the 20 value characters a refused ``…_key =`` match read (the
    scan goes on after them): an Azure key's signature, a vendor token."""
    for cstart, cend, kind in _candidates(text, start + 1, min(len(text), end + 600)):
        if cstart >= end:
            break
        clean = kind in _ANYWHERE or text[cstart] == 0x5C or _clean_start(text, cstart)
        span = _validate(kind, text, cstart, cend, scan) if clean else None
        if span is not None:
            return SecretHit(kind, span[0], span[1])
    return None


_FORMAT_PREFIXES = (
    b"sk-", b"sk_", b"rk_", b"AKIA", b"ASIA", b"ABIA", b"ACCA", b"gh", b"AIza", b"xox", b"eyJ",
    b"-----", b"SG.", b"gl", b"GR1348941", b"hf_", b"npm_", b"pypi-", b"do", b"https://hooks",
    b"AKCp", b"sq0", b"AC", b"SK", b"A3T", b"CFPAT", b"CLOJARS", b"dp.", b"dt0c01.", b"EAAC",
    b"FLWSECK", b"fio-u-", b"lin_", b"NR", b"PMAK-", b"whsec_", b"amzn.", b"akab", b"sk.", b"xapp",
    b"LS0tLS1CRUdJTi",
)  # fmt: skip


_OPEN_QUOTE = re.compile(rb"(?:\\*[\"'`])?")


def _nested_format(text: bytes, start: int, scan: _Scan) -> SecretHit | None:
    """A credential that starts inside an assignment's value (a format, or a nested key)."""
    key_end = _KEY_OPERATOR.match(text, start + (text[start] == 0x22))
    if key_end is None:
        return None
    # past the value's opening quote, escaped too (``\\"`` in a JSON-encoded object: a service
    # account's ``\\"private_key\\": \\"-----BEGIN`` inside a string)
    after = _value_start(text, key_end.end())
    opened = _OPEN_QUOTE.match(text, after)
    vstart = opened.end() if opened else after
    _, vend = _value_at(text, vstart)
    head = text[vstart : vend + 4]
    if not (
        head.startswith(_FORMAT_PREFIXES)
        or PREFIXED_ANY.match(head) is not None
        or b"=" in head
        or b"://" in head
        or text[vend - 1 : vend] == b":"  # a nested ``key: value``
    ):
        return None  # nothing a format or a nested key could start with
    for cstart, cend, kind in _candidates(text, vstart, min(len(text), vstart + 600)):
        if cstart > vend:
            break
        span = _validate(kind, text, cstart, cend, scan)
        if span is not None:
            return SecretHit(kind, span[0], span[1])
    return None


def secret_candidates(text: bytes, pos: int = 0) -> list[tuple[int, int, str]]:
    """Every (start, end, kind) of ``SECRET_PREFILTER`` from ``pos`` on (non-overlapping)."""
    return list(_candidates(text, pos))


def _candidates(
    text: bytes, pos: int = 0, endpos: int | None = None
) -> Iterator[tuple[int, int, str]]:
    found = _scanner().finditer(text, pos, len(text) if endpos is None else endpos)
    for match in found:
        index = match.lastindex
        if index is None:  # cannot happen: every alternative is a group
            continue
        yield match.start(), match.end(), SECRET_KINDS[index - 1]
