"""Credential formats: caught with their real structure; placeholders and look-alikes admitted."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import string
import time
import uuid

import pytest

from fak.abi import Reason
from fak.screen import Detector, find_secret, screen_bytes
from fak.screen.secrets import (
    SECRET_KINDS,
    SECRET_PREFILTER,
    candidate_at,
    find_secrets,
    is_placeholder,
)
from fak.screen.tokens import BIG_DFA, compile_latin1

RNG = random.Random(7)
ALNUM = string.ascii_letters + string.digits
B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def github(prefix: str) -> str:
    body = rand(ALNUM, 30)
    crc = binascii.crc32(body.encode())
    tail = ""
    while crc:
        crc, rem = divmod(crc, 62)
        tail = B62[rem] + tail
    return prefix + body + tail.rjust(6, "0")


def jwt() -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    sig = base64.urlsafe_b64encode(RNG.randbytes(32)).rstrip(b"=").decode()
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': '42', 'iat': 1})}.{sig}"


# kind -> (credential, the text it sits in)
CASES: dict[str, str] = {
    "openai_key": "OPENAI_API_KEY=sk-proj-" + rand(ALNUM + "-_", 60) + "T3BlbkFJ" + rand(ALNUM, 40),
    "anthropic_key": "key: sk-ant-api03-" + rand(ALNUM + "-_", 93) + "AA",
    "openai_legacy": "sk-" + rand(ALNUM, 20) + "T3BlbkFJ" + rand(ALNUM, 20),
    "aws_key_id": "aws_access_key_id = ASIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "github_token": "token " + github("gho_"),
    "github_pat": "GH=github_pat_11" + rand(ALNUM, 20) + "_" + rand(ALNUM, 59),
    "google_api_key": '{"key": "AIza' + rand(ALNUM + "-_", 35) + '"}',
    "stripe_key": "stripe.api_key = 'rk_live_" + rand(ALNUM, 40) + "'",
    "slack_token": "SLACK=xoxb-730419582216-4410927365083-" + rand(ALNUM, 24),
    "slack_webhook": "https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D4E/" + rand(ALNUM, 24),
    "jwt": "Cookie: session=" + jwt(),
    "private_key": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI" + rand(ALNUM, 60) + "\n-----END",
    "sendgrid_key": "SG." + rand(ALNUM, 22) + "." + rand(ALNUM + "-_", 43),
    "gitlab_token": "glpat-" + rand(ALNUM, 20),
    "huggingface_token": "HF_TOKEN=hf_" + rand(ALNUM, 34),
    "npm_token": "//registry.npmjs.org/:_authToken=npm_" + rand(ALNUM, 36),
    "pypi_token": "password = pypi-AgEIcHlwaS5vcmc" + rand(ALNUM, 60),
    "artifactory_key": "X-JFrog-Art-Api: AKCp" + rand(ALNUM, 69),
    "square_token": "square: sq0csp-" + rand(ALNUM + "-_", 43),
    "twilio_key": "sid = AC" + rand("0123456789abcdef", 32),
    "telegram_bot_token": "bot 123456789:AA" + rand(ALNUM + "-_", 33),
    "digitalocean_token": "dop_v1_" + rand("0123456789abcdef", 64),
    "azure_storage_key": "AccountKey=" + base64.b64encode(RNG.randbytes(64)).decode() + ";",
    "url_credentials": "DATABASE_URL=postgresql://app:" + rand(ALNUM, 20) + "@db:5432/app",
    "login_pair": "machine api.example.com login deploy password " + rand(ALNUM, 20),
    "auth_header": "Authorization: Bearer " + rand(ALNUM + "-._", 40),
    "bearer": "curl -H 'x: bearer " + rand(ALNUM, 32) + "'",
    "assignment": 'client_secret: "' + rand(ALNUM + "~-", 34) + '"',
    "vendor_token": "CONTENTFUL=CFPAT-" + rand(ALNUM + "_-", 43),
}

# vendor prefixes from whispers' known-key list (issue 25, a second train source): the
# ``vendor_token`` kind, one example in each vendor's documented shape
VENDOR_CASES: dict[str, str] = {
    "contentful": "token: CFPAT-" + rand(ALNUM + "_-", 43),
    "clojars_token": "clojars: CLOJARS_" + rand("abcdef0123456789", 60),
    "doppler_token": "DOPPLER_TOKEN=dp.pt." + rand(ALNUM, 43),
    "dynatrace_token": "Api-Token dt0c01." + rand(ALNUM, 24) + "." + rand(ALNUM, 64),
    "facebook_token": "fb = EAACEdEose0cBA" + rand(ALNUM, 60),
    "flutterwave_key": "FLWSECK_TEST-" + rand("abcdef0123456789", 32) + "-X",
    "frameio_token": "frame: fio-u-" + rand(ALNUM + "_-", 64),
    "grafana_token": "Authorization: glsa_" + rand(ALNUM, 32) + "_" + rand("abcdef0123456789", 8),
    "linear_key": "LINEAR=lin_api_" + rand(ALNUM, 40),
    "newrelic_key": "license NRAK-" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 27),
    "postman_key": "x-api-key: PMAK-" + rand("abcdef0123456789", 24) + "-" + rand("abcdef0123", 34),
    "stripe_webhook_secret": "endpoint_secret = 'whsec_" + rand(ALNUM, 32) + "'",
    "mws_key": "mws: amzn.mws." + str(uuid.UUID(int=RNG.getrandbits(128))),
    "mapbox_secret": "MAPBOX=sk.eyJ1IjoiZGV2IiwiYSI6I" + rand(ALNUM, 20) + "." + rand(ALNUM, 22),
    "akamai_token": "client_token = akab-" + rand("abcdefghij0123456789", 33),
    "terraform_token": "credentials: " + rand(ALNUM, 14) + ".atlasv1." + rand(ALNUM + "-_", 67),
    "fcm_server_key": "key=AAAA" + rand(ALNUM, 7) + ":APA91b" + rand(ALNUM + "-_", 134),
    "zapier_hook": "https://hooks.zapier.com/hooks/catch/4821937/" + rand(ALNUM, 7) + "/",
    "webhook_url": "POST https://discord.com/api/webhooks/1098765432109876543/"
    + rand(ALNUM + "-_", 68),
}


def test_every_kind_has_a_case() -> None:
    assert set(CASES) == set(SECRET_KINDS)


@pytest.mark.parametrize("vendor", sorted(VENDOR_CASES))
def test_each_vendor_prefix_is_caught(vendor: str) -> None:
    text = ("ok: build 4471 finished\n" + VENDOR_CASES[vendor] + "\nbye\n").encode()
    assert "vendor_token" in {h.kind for h in find_secrets(text)}, vendor


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_format_is_caught_in_a_realistic_line(kind: str) -> None:
    text = ("ok: build 4471 finished\n" + CASES[kind] + "\nbye\n").encode()
    hits = find_secrets(text)
    assert hits, kind
    assert kind in {h.kind for h in hits}
    finding = screen_bytes(text)
    assert finding is not None
    assert (finding.reason, finding.detector) == (Reason.SECRET_EXFIL, Detector.SECRET_PATTERN)
    start, end = finding.span or (0, 0)
    assert 0 <= start < end <= len(text)
    assert b"\n" not in text[start:end] or kind == "private_key"


def test_github_checksum_tail_is_verified() -> None:
    good = github("ghp_")
    assert find_secrets(good.encode())
    # a hand-made token with the right shape but a low-entropy, wrong tail is not a credential
    assert not find_secrets(b"ghp_" + b"abcdefghijklmnopqrstuvwxyzab" * 1 + b"00000000")


def test_aws_pair_session_token_and_key_id() -> None:
    key_id = "ASIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    secret = rand(ALNUM + "+/", 40)
    text = f"[default]\naws_access_key_id={key_id}\naws_secret_access_key={secret}\n".encode()
    kinds = {h.kind for h in find_secrets(text)}
    assert {"aws_key_id", "assignment"} <= kinds


def test_a_signed_requests_credential_scope_is_not_a_secret() -> None:
    """A presigned S3 upload an API hands out names its key id in a SigV4 credential scope
    (``X-Amz-Credential``, raw or URL-encoded): not a secret. The session token beside it is."""
    key_id = "ASIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
    scope = f"{key_id}/20201203/us-east-1/s3/aws4_request"
    for text in (
        f'{{"name": "X-Amz-Credential", "value": "{scope}"}}',
        f'{{"x-amz-credential": "{scope}"}}',
        "https://b.s3.amazonaws.com/k?X-Amz-Credential=" + scope.replace("/", "%2F"),
        f"Authorization: AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders=host",
    ):
        assert find_secret(text.encode()) is None, text
    token = rand(ALNUM + "+/", 120)
    assert find_secret(
        f'{{"x-amz-credential": "{scope}", "x-amz-security-token": "{token}"}}'.encode()
    )
    # the key id alone, or followed by anything but a scope, is still held
    assert find_secret(f"aws_access_key_id={key_id}".encode())
    assert find_secret(f"{key_id}/notes/readme".encode())


PLACEHOLDERS = [
    b"export OPENAI_API_KEY=sk-...",
    b"export OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    b'api_key="<YOUR_API_KEY>"',
    b"aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    b"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    b"GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    b"Authorization: Bearer <token>",
    b"Authorization: Bearer $TOKEN",
    b"Authorization: Bearer ${ACCESS_TOKEN}",
    b"DATABASE_URL=postgres://user:password@localhost:5432/mydb",
    b"mongodb://<username>:<password>@cluster0.example.mongodb.net",
    b"your key: sk-proj-****************************abcd",
    b"api_key: ${API_KEY}",
    b"client_secret: YOUR_CLIENT_SECRET",
    b'token = os.environ["GITHUB_TOKEN"]',
    b"secret = settings.SECRET_KEY",
    b"(m.withCredentials=!!r.withCredentials),f&&",  # minified code (axios, video.js)
    b"password = getpass.getpass()",
    b"password: changeme",
    b"STRIPE_KEY=sk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
    b"SECRET_KEY=replace-me-in-production",
    b"xoxb-your-bot-token",
    b"-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
    b"-----BEGIN PRIVATE KEY-----\n<your key here>\n-----END PRIVATE KEY-----",
    b'"next_page_token": "CiAKGjBpNDd2Nmp0Mj1kMHNTb2ZfMEZNeEhsbRIHdGFibGVz"',
    # the well-known examples from jwt.io, Stripe's and GitHub's documentation
    b"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwia"
    b"WF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    b"stripe.api_key = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc'",
    b"curl -H 'Authorization: token ghp_16C7e42F292c6912E7710c838347Ae178B4a'",
    b'"api_key": "0123456789abcdef0123456789abcdef"',
    # the formats added from detect-secrets' rules (issue 25): their documentation placeholders
    b"TWILIO_ACCOUNT_SID=ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    b"square: sq0atp-XXXXXXXXXXXXXXXXXXXXXX",
    b"X-JFrog-Art-Api: AKCpYOUR_API_KEY_HERE_0000",
    b"bot 123456789:ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghi",
    b"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    # the vendor-prefixed formats from whispers' list: placeholders and names, not keys
    b"CONTENTFUL_MANAGEMENT_TOKEN=CFPAT-your-personal-access-token",
    b"CLOJARS_USERNAME=alice CLOJARS_PASSWORD=${CLOJARS_DEPLOY_TOKEN}",
    b"DOPPLER_TOKEN=dp.st.xxxxxxxxxxxxxxxxxxxxxxxx",
    b"endpoint_secret = 'whsec_...'",
    b"stripe listen prints whsec_YOUR_WEBHOOK_SIGNING_SECRET",
    b"POSTMAN_API_KEY=PMAK-XXXXXXXXXXXXXXXXXXXXXXXX-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    b"https://discord.com/api/webhooks/{webhook.id}/{webhook.token}",
    b"NEW_RELIC_LICENSE_KEY=NRAK-<your license key>",
    b"see the lin_api_version field and the akab-settings page",
]


@pytest.mark.parametrize("text", PLACEHOLDERS)
def test_placeholders_and_references_are_not_secrets(text: bytes) -> None:
    assert find_secret(text) is None, [(h.kind, text[h.start : h.end]) for h in find_secrets(text)]


LOOKALIKES = [
    b"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END",
    b"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END",
    b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host",
    ("sha256: " + hashlib.sha256(b"x").hexdigest()).encode(),
    ("commit " + RNG.randbytes(20).hex()).encode(),
    ("id: " + str(uuid.UUID(int=RNG.getrandbits(128)))).encode(),
    b'<img src="data:image/png;base64,' + base64.b64encode(RNG.randbytes(300)) + b'">',
    b'"integrity": "sha512-' + base64.b64encode(RNG.randbytes(64)) + b'"',
    b"header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 is the JWT header",
    b"pk_live_" + rand(ALNUM, 24).encode() + b" is the publishable key",
    b"The password policy requires 12 characters.",
    b"token_count: 1234, api_key_id: 77",
    # near the new formats: a timestamp before a colon, an md5 after a word, a dotted name
    b"1700000000:build-and-test-the-whole-project-now",
    b"ACTION" + hashlib.md5(b"x").hexdigest().encode(),
    b"see gitlab-ci.yml and glpat-docs for the token format",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_public_material_hashes_ids_and_data_uris_are_admitted(text: bytes) -> None:
    assert find_secret(text) is None, [(h.kind, text[h.start : h.end]) for h in find_secrets(text)]


TYPED_KEY = rand(ALNUM, 24)
TYPED_SECRETS = [
    f'    api_key: str = "{TYPED_KEY}"',
    f"    secret_key: Optional[str] = '{TYPED_KEY}'",
    f'    password: str | None = "{TYPED_KEY}"',
    f'const apiKey: string = "{TYPED_KEY}";',
    f'  private readonly clientSecret: string = "{TYPED_KEY}";',
    f'deepgram_key: Final[str] = "{TYPED_KEY}"',
]
TYPED_NAMES = [
    "    AllowedPrivateKeys: TypeAlias = Union[",
    "    client_secret: ClientSecretCredential = build()",
    "  private apiKey: ApiKeyService = inject(ApiKeyService);",
    '    api_key: str = os.environ["API_KEY"]',
    "    password: str = Field(..., min_length=8)",
    "    access_token: AccessTokenType = None",
]


CODE_REFERENCES = [
    "    def __init__(self, credentials: GoogleCredentials | None = None):",
    "def refresh_credentials(credentials: GoogleCredentials, *, force: bool) -> None:",
    "    def __init__(self, api_keys: AsyncAPIKeys) -> None:",
    "        private_key: PKCS7PrivateKeyTypes,",
    "\tconst apiTokenCandidate = config?.apiKey || env?.CLOUDFLARE_API_KEY;",
    "\t\tapiKeyEnvar: providerOptions.config?.apiKeyEnvar || 'X',",
]
STILL_VALUES = [
    ("password: Kx9vQ2mZ7pLw, user: bob", b"Kx9vQ2mZ7pLw"),
    ("my password: Summer2024, thanks", b"Summer2024"),
    ('{"password": "GoogleCredentials", "user": "bob"}', b"GoogleCredentials"),
]


@pytest.mark.parametrize("line", CODE_REFERENCES)
def test_a_parameters_type_and_an_optional_chain_are_not_values(line: str) -> None:
    """A class name a comma, bar or bracket follows is a parameter's type; ``a?.b`` is a
    member of an object (JavaScript), as ``a.b`` is."""
    text = f"{line}\n".encode()
    assert find_secret(text) is None, [(h.kind, text[h.start : h.end]) for h in find_secrets(text)]


@pytest.mark.parametrize(("line", "value"), STILL_VALUES)
def test_a_value_shaped_like_a_password_is_still_one(line: str, value: bytes) -> None:
    """Random characters, a word and its digits, or a quoted string stay values."""
    text = f"{line}\n".encode()
    assert [text[h.start : h.end] for h in find_secrets(text)] == [value]


@pytest.mark.parametrize("line", TYPED_SECRETS)
def test_a_typed_assignment_is_judged_by_its_value(line: str) -> None:
    """``name: Type = value`` (Python's annotations, TypeScript): the value after the ``=``."""
    text = f"class Settings:\n{line}\n".encode()
    assert [text[h.start : h.end] for h in find_secrets(text)] == [TYPED_KEY.encode()]


@pytest.mark.parametrize("line", TYPED_NAMES)
def test_a_type_annotation_is_not_a_value(line: str) -> None:
    """The annotation of a secret-named attribute names a type (``TypeAlias``,
    ``ClientSecretCredential``), and the value after it here is code."""
    text = f"class Settings:\n{line}\n".encode()
    assert find_secret(text) is None, [(h.kind, text[h.start : h.end]) for h in find_secrets(text)]


def test_candidate_naming_agrees_with_the_grouped_pattern_everywhere() -> None:
    """``candidate_at`` names a start with a Set and ends it with the group-free automaton; the
    reference is ``SECRET_PREFILTER``'s own match (one group per format) at that position."""
    grouped = compile_latin1(SECRET_PREFILTER, BIG_DFA)
    pieces = [*CASES.values(), *VENDOR_CASES.values()]
    text = "\n".join(pieces).encode() + b"\n" + b"\n".join(PLACEHOLDERS + LOOKALIKES)
    text = b"sk-" + text  # a format at offset 0 (the second Set)
    named = 0
    for pos in range(len(text)):
        match = grouped.match(text, pos)
        want = None if match is None else (pos, match.end(), SECRET_KINDS[match.lastindex - 1])
        assert candidate_at(text, pos) == want, (pos, text[pos : pos + 40])
        named += want is not None
    assert named > len(pieces)  # most cases start a candidate, some several


def test_short_prefix_formats_do_not_fire_inside_base64() -> None:
    """``AKC`` / ``AC`` + base64 characters occur by chance in certificates and data URIs."""
    rng = random.Random(25)
    for prefix in (b"AKCp", b"ACab12cd34ef56", b"SK00ff"):
        for _ in range(50):
            blob = base64.b64encode(rng.randbytes(300))
            at = rng.randrange(8, 300)
            body = blob[:at] + rng.choice([b"+", b"/"]) + prefix + blob[at:]
            pem = b"-----BEGIN CERTIFICATE-----\n" + body + b"\n-----END CERTIFICATE-----"
            kinds = {h.kind for h in find_secrets(pem)}
            assert not kinds & {"artifactory_key", "twilio_key", "square_token"}, body


def test_is_placeholder() -> None:
    assert is_placeholder(b"xxxxxxxx")
    assert is_placeholder(b"<YOUR_KEY>")
    assert is_placeholder(b"AKIAIOSFODNN7EXAMPLE")
    assert not is_placeholder(rand(ALNUM, 32).encode().replace(b"x", b"Q"))


@pytest.mark.parametrize(
    "body",
    [
        b"sk-proj-" + b"a" * (1 << 20),
        b"Authorization: Bearer " * 50000,
        b"api_key=" * 100000,
        b"postgres://u:" * 60000,
        b"-----BEGIN PRIVATE KEY-----" * 30000,
        b"eyJhbGciOiJI.eyJ" * 60000,
    ],
)
def test_secret_scan_is_linear_on_hostile_inputs(body: bytes) -> None:
    def best(data: bytes) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            find_secrets(data)
            times.append(time.perf_counter() - start)
        return min(times)

    small, large = best(body[: len(body) // 4]), best(body)
    assert large < max(small, 1e-3) * 12
    assert large < 2.0
