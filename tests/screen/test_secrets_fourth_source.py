"""Formats added from a fourth train source (issue 25, branch i25-sec2): the examples of
Kingfisher's rules. Each format is caught in its documented shape (the strings here are made up
in that shape); placeholders, names that share a prefix and ordinary URLs are admitted."""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from fak.screen import find_secret
from fak.screen.secrets import find_secrets

RNG = random.Random(2512)
ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def uuid() -> str:
    return "-".join(rand(HEX, n) for n in (8, 4, 4, 4, 12))


# vendor -> a line holding its credential, in the vendor's documented shape
VENDOR_CASES: dict[str, str] = {
    "1password_service_account": "export OP_SERVICE_ACCOUNT_TOKEN=ops_"
    + b64url({"signInAddress": "my.1password.com", "userAuth": rand(ALNUM, 40)})
    + rand(ALNUM, 40),
    "1password_recovery_key": "recovery: 1PRK-" + "-".join(rand(UPPER, 4) for _ in range(13)),
    "gcp_express_key": "GOOGLE_API_KEY=AQ.Ab8R" + rand(ALNUM + "_-", 46),
    "bedrock_long_lived": "AWS_BEARER_TOKEN_BEDROCK=ABSKQmVkcm9ja0FQSUtleS"
    + rand(ALNUM + "+/", 100),
    "bitbucket_app_password": "BITBUCKET_APP_PASSWORD=ATBB" + rand(ALNUM, 24) + rand(HEX, 8),
    "cfx_license": 'sv_licenseKey "cfxk_' + rand(ALNUM + "_", 30) + '"',
    "circleci_project": "CIRCLE_TOKEN=CCIPRJ_" + rand(ALNUM, 22) + "_" + rand(HEX, 40),
    "dependency_track": "X-Api-Key: odt_" + rand(ALNUM, 32),
    "dub": "DUB_API_KEY=dub_" + rand(ALNUM, 24),
    "dynatrace": "DT_TOKEN=dt0s02." + rand(UPPER, 8) + "." + rand(UPPER, 64),
    "arcjet": "ARCJET_KEY=ajkey_" + rand(LOWER, 26),
    "mercadopago": "ACCESS=APP_USR-"
    + rand("0123456789", 16)
    + "-"
    + rand("0123456789", 6)
    + "-"
    + rand(HEX, 32)
    + "-"
    + rand("0123456789", 9),
    "midtrans": "MIDTRANS_SERVER_KEY=SB-Mid-server-" + rand(ALNUM + "_", 24),
    "open_vsx": "OVSX_PAT=ovsxat_" + uuid(),
    "posthog_project_secret": "POSTHOG=phs_" + rand(ALNUM, 46),
    "postman_collection": "token PMAT-" + rand(UPPER, 26),
    "riot": "X-Riot-Token: RGAPI-" + uuid(),
    "sonarqube": "sonar.login=sqp_" + rand(HEX, 40),
    "sourcegraph": "SRC_ACCESS_TOKEN=slk_" + rand(HEX, 64),
    "tavily": "TAVILY_API_KEY=tvly-" + rand(ALNUM, 32),
    "tolgee": "TOLGEE_PAT=tgpat_" + rand(LOWER, 52),
    "mapbox_temporary": "token: tk.eyJ1Ijoi" + rand(ALNUM, 40) + "." + rand(ALNUM + "_-", 22),
    "vault_recovery": "VAULT=hvr." + rand(ALNUM, 40),
    "hubspot_private_app": "Authorization: pat-na1-" + uuid(),
    "inngest_signing": "INNGEST_SIGNING_KEY=signkey-prod-" + rand(HEX, 64),
    "jina": "JINA_API_KEY=jina_" + rand(ALNUM, 60),
    "friendli": "FRIENDLI_TOKEN=flp_" + rand(ALNUM, 46),
    "axiom": "AXIOM_TOKEN=xaat-" + uuid(),
    "fireworks": "FIREWORKS_API_KEY=fw_" + rand(ALNUM, 24),
    "nuget": "nuget push -k oy2" + rand(LOWER, 43),
    "tinybird": "TB_TOKEN=p.eyJ1IjogI" + rand(ALNUM + "_-", 100) + "." + rand(ALNUM + "_-", 43),
    "dropbox_short_lived": "DROPBOX=sl." + rand(ALNUM + "_-", 140),
    "stytch": "STYTCH_SECRET=secret-live-" + rand(ALNUM + "_-", 35),
    "statsig": "STATSIG_SERVER_KEY=secret-" + rand(ALNUM, 43),
    "crates_io": "CARGO_REGISTRY_TOKEN=cio" + rand(ALNUM, 32),
    "branch": "BRANCH_KEY=key_live_" + rand(ALNUM, 32),
    "elevenlabs": "xi-api-key: sk_" + rand(HEX, 48),
    "coze": "COZE=pat_" + rand(ALNUM, 64),
    "shortcut": "SHORTCUT=sct_rwa_" + rand(ALNUM + "_", 60),
    "voiceflow": "VF_KEY=VF.DM." + rand(HEX, 24) + "." + rand(ALNUM, 16),
    "stackhawk": "HAWK_API_KEY=hawk." + rand(ALNUM, 20) + "." + rand(ALNUM, 20),
    "workato": "Authorization: Bearer wrka-eyJ" + rand(ALNUM + "_-", 80),
    "cloudflare_origin_ca": "X-Auth-User-Service-Key: v1.0-" + rand(HEX, 24) + "-" + rand(HEX, 146),
    "adafruit_io": "ADAFRUIT_IO_KEY=aio_" + rand(ALNUM, 28),
    "age_post_quantum": "AGE-SECRET-KEY-PQ-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 80),
}


@pytest.mark.parametrize("vendor", sorted(VENDOR_CASES))
def test_each_kingfisher_format_is_held(vendor: str) -> None:
    line = VENDOR_CASES[vendor]
    text = ("ok: build 4471 finished\n" + line + "\nbye\n").encode()
    assert find_secrets(text), vendor


def azure_key(provider: str) -> str:
    """Azure's identifiable key: 52 random, ``JQQJ`` and a version, a date, the provider's
    four-letter signature, four more (84 characters)."""
    return rand(ALNUM, 52) + "JQQJ99" + "BDAC" + rand(ALNUM, 14) + provider + rand(ALNUM, 4)


STRUCTURED = {
    # Azure DevOps PATs and Cognitive Services keys share the identifiable shape
    "vendor_token": "AZURE_DEVOPS_PAT=" + azure_key("AZDO"),
    # a GitHub app installation token that carries a JWT
    "github_token": "GITHUB_TOKEN=ghs_48213_"
    + b64url({"alg": "RS256", "typ": "JWT"})
    + "."
    + b64url({"iat": 1745568000, "iss": "48213"})
    + "."
    + rand(ALNUM + "_-", 43),
    # a Redis URL whose user is empty
    "url_credentials": "REDIS_URL=rediss://:" + rand(ALNUM, 32) + "@cache.internal:6380/0",
    "auth_header": "curl -H 'Authorization: ApiKey " + rand(ALNUM + "+/", 60) + "=='",
    "anthropic_key": "ANTHROPIC_OAUTH=sk-ant-oat01-" + rand(ALNUM + "_-", 54),
}


@pytest.mark.parametrize("kind", sorted(STRUCTURED))
def test_structured_shapes_are_held(kind: str) -> None:
    assert kind in {h.kind for h in find_secrets(STRUCTURED[kind].encode())}


def test_a_devops_pat_with_zero_padded_fields_is_held() -> None:
    # the fields after ``JQQJ`` are not random (a date, zero padding, the provider); the 52
    # characters before it are
    key = rand(ALNUM, 52) + "JQQJ99BAAC" + "A" * 14 + "AZDO" + rand(ALNUM, 4)
    hits = find_secrets(f'{{"pat": "{key}"}}'.encode())
    assert [h.kind for h in hits] == ["vendor_token"]


def test_an_azure_key_is_spanned_from_its_first_character() -> None:
    key = azure_key("ACOG")
    text = ('{"key": "' + key + '"}').encode()
    (hit,) = find_secrets(text)
    assert text[hit.start : hit.end] == key.encode()


@pytest.mark.parametrize(
    "line",
    [
        "SSWS " + rand(ALNUM + "_-", 42),
        "sso-key " + rand(ALNUM, 35) + ":" + rand(ALNUM, 22),
        "OAuth " + rand(HEX, 64),
    ],
)
def test_more_authorization_schemes_are_held(line: str) -> None:
    hits = find_secrets(("Authorization: " + line).encode())
    assert {h.kind for h in hits} == {"auth_header"}


@pytest.mark.parametrize(
    "line",
    [
        'SQL_ADMIN_PASSWORD="' + rand(ALNUM, 10) + "!#" + rand(ALNUM, 6) + '"',
        "PresharedKey = " + base64.b64encode(RNG.randbytes(32)).decode(),
        'validationKey="' + rand("0123456789ABCDEF", 128) + '"',
        "RAILS_MASTER_KEY=" + rand(HEX, 32),
    ],
)
def test_secret_named_settings_are_held(line: str) -> None:
    assert {h.kind for h in find_secrets(line.encode())} == {"assignment"}


LOOKALIKES = [
    # connection strings of documentation: placeholders, variables, masks, no password
    b"REDIS_URL=redis://:password@localhost:6379/0",
    b"REDIS_URL=redis://:${REDIS_PASSWORD}@redis:6379",
    b"DATABASE_URL=postgres://user:<password>@db:5432/app",
    b"MONGO=mongodb://:****@cluster0.mongodb.net/test",
    b"see http://:8080@ and ftp://@host/ in the parser's tests",
    b"git clone https://github.com/org/repo.git; ssh://git@github.com/org/repo",
    b"an email like user@example.com and http://example.com/a:b@c",
    # settings named like secrets whose value is no secret, and ``min`` / ``max`` keys
    b"password_min_length: aB3dE5gH7jK9",
    b"ADMIN_PASSWORD=changeme",
    b"token_max_age: 3600s-per-session",
    b"master_key_rotation_days = 90",
    b"const maxTokens = reasoningEnabled && isHighEffort;",
    b"const maxCompletionTokens = isReasoningModel ? config.limit : 4096;",
    b"passwordMinLength: aB3dE5gH7jK9",
    # the new auth schemes and prefixes in their documentation placeholders
    b"Authorization: ApiKey <your-api-key>",
    b"Authorization: SSWS ${OKTA_API_TOKEN}",
    b"GOOGLE_API_KEY=AQ.Ab8RXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    b"OP_SERVICE_ACCOUNT_TOKEN=ops_eyJ...",
    b"TAVILY_API_KEY=tvly-YOUR_API_KEY",
    # names in code that share the new short prefixes
    b"from sklearn import sk_learn_model_selection_parameters_for_the_grid",
    b"pat_matching_engine_configuration_v2 = load()",
    b"fw_version_string_for_the_bootloader = '2.1.0'",
    b"the ciolfi_family_recipes_collection_vol_one",
    b"sl.append(x); sl.sort()",
    b"kubectl get secret-manager-configuration-for-the-staging-cluster",
    b"key_live_reload_enabled_for_the_development_server = True",
    b"import aio_http_client_session_factory",
    b"visit hawk.io/docs and hawk.example.com",
    b"release v1.0-beta-2 and v1.0-rc.1",
    b"the JQQJ marker and GHS_12345_eyJ notes",
    b"ghs_123_eyJnotajwt.atall.really",
    b"1PRK-ABCD is how the recovery kit starts",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_of_the_fourth_source_formats_pass(text: bytes) -> None:
    assert find_secret(text) is None, [(h.kind, text[h.start : h.end]) for h in find_secrets(text)]


B64 = ALNUM + "+/"


def identifiable(before: int, signature: str, after: str, alphabet: str = B64) -> str:
    """An Azure identifiable key of Microsoft's shape: random, the signature, the rest."""
    return rand(alphabet, before) + signature + after


IDENTIFIABLE = {
    "storage (64 bytes)": identifiable(76, "+ASt", rand(B64, 5) + "Q=="),
    "cosmos db (64 bytes)": identifiable(76, "ACDb", rand(B64, 5) + "g=="),
    "api management (64 bytes)": identifiable(76, "APIM", rand(B64, 5) + "w=="),
    "event hub (32 bytes)": identifiable(33, "+AEh", "K" + rand(B64, 5) + "="),
    "iot hub (32 bytes)": identifiable(33, "AIoT", "B" + rand(B64, 5) + "="),
    "search (39 bytes)": identifiable(42, "AzSe", "C" + rand(ALNUM, 5), ALNUM),
    "container registry (39 bytes)": identifiable(42, "+ACR", "D" + rand(B64, 5)),
    "functions (40 bytes)": identifiable(44, "AzFu", rand(ALNUM + "_-", 5) + "A==", ALNUM + "_-"),
    "entra id client secret": identifiable(3, "8Q~", rand(ALNUM + "_-.~", 34), ALNUM + "_-.~"),
}


@pytest.mark.parametrize("name", sorted(IDENTIFIABLE))
def test_azure_identifiable_keys_are_held_whole(name: str) -> None:
    key = IDENTIFIABLE[name]
    for text in (f"AZURE_KEY={key}\n", f'{{"primaryKey": "{key}"}}', f'"log\\n{key}"'):
        hits = find_secrets(text.encode())
        assert [text.encode()[h.start : h.end] for h in hits] == [key.encode()], (name, text)


@pytest.mark.parametrize(
    "text",
    [
        b"Azure APIM policies and AIoT devices; AzSe, AzFu and ACDb are signatures",
        b"see the 8Q~ marker in the docs and 7Q~ too",
        # a signature not at its offset, or in a run longer than any key
        ("k=" + rand(B64, 70) + "+ASt" + rand(B64, 5) + "Q==").encode(),
        ("k=" + rand(B64, 120) + "APIM" + rand(B64, 5) + "w==").encode(),
        ("k=" + rand(B64, 33) + "+AEh" + rand(B64, 30) + "=").encode(),
        # the last line of a PEM block can be 44 characters: a signature there is one in 6e7
        b"-----BEGIN CERTIFICATE-----\nMIIB"
        + rand(B64, 60).encode()
        + b"\n-----END CERTIFICATE-----",
    ],
)
def test_signature_lookalikes_pass(text: bytes) -> None:
    assert find_secret(text) is None, [(h.kind, text[h.start : h.end]) for h in find_secrets(text)]


def test_jqqj_inside_base64_is_not_an_azure_key() -> None:
    rng = random.Random(26)
    for _ in range(60):
        blob = base64.b64encode(rng.randbytes(200)).decode()
        at = rng.randrange(60, 200)
        body = blob[:at] + "JQQJ" + blob[at:]
        text = ("-----BEGIN CERTIFICATE-----\n" + body + "\n-----END CERTIFICATE-----").encode()
        assert "vendor_token" not in {h.kind for h in find_secrets(text)}, body
