"""Secrets named by a bare ``key`` / ``api`` / ``auth`` / ``pat`` (issue 25, branch i25-sec4):
``deepgram_key = …``, ``ollama key = …``, ``wiki_PAT=…``, a secret's name and a space with no
operator, ``Authorization:`` with no scheme, and the carrier shapes around them (a nested
``key: value``, quotes escaped twice). Code names ordinary values so too, so the value must be a
credential on its own; every look-alike below (code's ``cache_key``, ``primary_key=True``,
``sort_key=lambda …``, digests, ids, names, public keys) passes. The values are made up."""

from __future__ import annotations

import pytest

from fak.screen.secret_values import credential_value
from fak.screen.secrets import find_secrets

HEX40 = "c64373f20f13e70beabd1085a9ecdf1e68483fd8"
HEX32 = "5cf5a109756266621bd5cf3354d66560"
HEX32B = "3db74a0502fac1fb4d5f9bdcc9c77916"
B62_40 = "Z2qBFGj2pDdbJUmupzFujSnJVV7bOAVQUpm8iJWJ"
B62_8 = "EzoSuQIq"
B62_32 = "53QVYDTOxPXU1A4WrgUUBvUbyOLSdYLQ"
B62_24 = "GEmW6iUHopFSKohyEdNd7YRX"
UP20 = "0JOSFTE3SQ0WX1Q2MKLT"
MIXHEX = "4D3bCcCb61dd4B0CF89ae22Cb9Ca62C8EbbF868e"
B64 = "kczl07Bbx2Bc9wqmqZBkE/CyuDzdnJfNoy0SfQ/e"
TFP = "tfp_Ozn9aLOT9aZFvmBtH7r9aZzAXcXt3XxgSu59SwwLonsg_l34v68IojWO9Ve"
HEX20 = "44c136b5092bd1e31bb4"
LOW46 = "rpopk48xecqanmyyhrgsml08ltf5wo43zpfpyfv7zcaqib"

# (text, the held value)
HELD = {
    "snake key, hex": (f"deepgram_key = {HEX40}", HEX40),
    "camel key, quoted": (f'deepgramKey: "{HEX40}"', HEX40),
    "upper env name": (f"CLARIFAI_KEY={HEX32}", HEX32),
    "dotted key name": (f"wechat.key = {HEX32B}", HEX32B),
    "key after a space": (f"ollama key = {HEX32}.{B62_24}", f"{HEX32}.{B62_24}"),
    "api suffix": (f"deepgram-api: {HEX40}", HEX40),
    "auth suffix": (f"SERVICE_AUTH={B62_32}", B62_32),
    "pat suffix": (f"wiki_PAT={B64}", B64),
    "key id and secret": (f"baseten_key = {B62_8}.{B62_32}", f"{B62_8}.{B62_32}"),
    "mixed-case hex": (f"pendo_key: '{MIXHEX}'", MIXHEX),
    "secret key with a space": (f"cohere secret key = {B62_40}", B62_40),
    "nested in a value": (f'API_KEY=pendo_key: "{MIXHEX}"', MIXHEX),
    "nested with =": (f"ACCESS_TOKEN=customerio_app_key={HEX32}", HEX32),
    "quotes escaped twice": (f'{{"v": "zerobounce_api_key = \\\\\\"{HEX32}\\\\\\""}}', HEX32),
    "no operator, access key": (f"eventbrite private access key {UP20}", UP20),
    "no operator, SECRET": (f"owlbot SECRET {HEX40}", HEX40),
    "no operator, api key": (f"customer.io api key {HEX32}", HEX32),
    "no operator, secret": (f"nuget secret {LOW46}", LOW46),
    "no operator, client secret": (f"Yahoo Client Secret {HEX40}", HEX40),
    "authorization, no scheme": (f"Authorization: {HEX40}", HEX40),
    "authorization member, no scheme": (f'"Authorization": "sk_{B62_32}"', f"sk_{B62_32}"),
    "typeform token": (f"TYPEFORM_TOKEN={TFP}", TFP),
    "gc notify key": (
        "gcntfy-my_service_key-26785a09-ab16-4eb0-8407-a37497a57506"
        "-3d844edf-8d35-48ac-975b-e847b4f122b0",
        "gcntfy-my_service_key-26785a09-ab16-4eb0-8407-a37497a57506"
        "-3d844edf-8d35-48ac-975b-e847b4f122b0",
    ),
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_a_credential_under_a_bare_key_is_held(name: str) -> None:
    text, value = HELD[name]
    data = ("ok: build 4471\n" + text + "\nbye\n").encode()
    hits = find_secrets(data)
    assert [data[h.start : h.end] for h in hits] == [value.encode()], name


def test_an_entra_secret_under_a_key_of_ids_keeps_its_format() -> None:
    # ``primaryKey`` names ids in code, so the bare key refuses; the Entra signature inside the
    # value it read is still found
    data = b'{"primaryKey": "f9x8Q~N52dTCF27KFvSPxhqu~nwFavY4Gd5JGLjd"}'
    hits = find_secrets(data)
    assert [(h.kind, data[h.start : h.end]) for h in hits] == [
        ("vendor_token", b"f9x8Q~N52dTCF27KFvSPxhqu~nwFavY4Gd5JGLjd")
    ]


def test_a_vendor_token_as_the_whole_authorization_keeps_its_kind() -> None:
    hits = find_secrets(f"Authorization: {TFP}\n".encode())
    assert [h.kind for h in hits] == ["vendor_token"]


NOT_HELD = {
    # code's ordinary keys
    "cache key, a name": 'cache_key = "UserProfileSettings2024"',
    "cache key, a digest": f'cache_key = "{HEX32}"',
    "primary key": "id = models.AutoField(primary_key=True)",
    "sort key": "rows.sort(sort_key=lambda item: item.name_of_the_thing_2024)",
    "commit key": f"commit_key = {HEX40}",
    "sha key": f"sha_key: {HEX40}",
    "etag key": f'etagKey = "{HEX32}"',
    "partition key": f"partition_key = {B62_32}",
    "price key": "'price_key': 'cache_audio_write_5m_mtok',",
    "dotted reference": "warningKey = debugSource.fileName + ':' + line",
    "module attribute": "OID_CLIENT_AUTH = ExtendedKeyUsageOID.CLIENT_AUTH",
    "three-part attribute": "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
    "optional chain": "const audioStorageKey = testCase.metadata?.audioStorageKey;",
    "a type in camel case": "account_key: RuleAzureSandboxesProxyAzureAccountKeyConfigAccountKey",
    "props": "jumpToKey: PropTypes.string.isRequired,",
    # no word ends at the suffix
    "upper-case run": f'CLEARKEY: "{HEX32}"',
    "a query's key": f"https://example.org/embed?url=x&key={HEX32}&type=image",
    "openapi": "openapi: n_.visitors.document.objects.OpenApi.fixedFields2",
    "monkey": f"monkey = {HEX40}x",
    # ids, digests, public halves, references
    "a uuid": "vendor_key = 279a2e9d-83b3-4416-9e2d-f721593e42a0",
    "short hex": f"customerio_key = {HEX20}",
    "gpg fingerprint": "GPG_KEY=7169605F62C751356D054A26A821E680E5FA6305",
    "kms arn": 'kms_key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-12345"',
    "image digest": f"image_key: sha256:{HEX32}{HEX32B}",
    "posthog project key": f'POSTHOG_KEY = "phc_{B62_40}"',
    "razorpay key id": "razorpay_key: rzp_live_Nf2tP7xB5qWvYd",
    "recaptcha site key": f'siteKey: "6Lc{B62_32}_{UP20}"',
    "web push server key": f'applicationServerKey: "B{B62_40}{B62_32}"',
    "publishable key": f"publishableKey = {B62_40}",
    "a client key": f"midtrans_client_key = 'SB-Mid-client-{B62_24}'",
    "a url": f"base_api = https://api.example.org/v2/{B62_24}",
    "a call": f"session_key = make_key({B62_32})",
    "a variable": "deploy_key = ${DEPLOY_KEY_FROM_THE_VAULT_2024}",
    # placeholders
    "placeholder hex": "deepgram_key = 1234567890abcdef1234567890abcdef12345678",
    "placeholder letters": "vendor_key = abcdef0123456789abcdef0123456789",
    "masked": "vendor_key = xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    # no operator: prose and tokens that go on
    "prose": "the secret ingredient of the recipe is patience and practice",
    "csrf token": f"the csrf token {HEX32} was rejected",
    "a token that goes on": "invalid key sizeTLSv1.3-SHA2-256TLSv1.2-SHA2-256invalid dns name",
    "words after token": "yield token self_attention_output_projection",
    # authorization with no scheme: names
    "authorization, a name": 'headers = {"Authorization": authorizationHeaderValue2024}',
    "authorization, camel words": "Authorization: BearerTokenProviderForAzure123",
}


@pytest.mark.parametrize("name", sorted(NOT_HELD))
def test_look_alikes_under_bare_keys_are_not_held(name: str) -> None:
    assert find_secrets(NOT_HELD[name].encode()) == [], name


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (HEX40.encode(), True),
        (B62_32.encode(), True),
        (UP20.encode(), True),
        (b"UserProfileSettings2024", False),  # classes change rarely: a name
        (b"cache_audio_write_5m_mtok", False),
        (b"RuleAzureSandboxesProxyAzureAccountKey", False),  # letters alone
        (HEX20.encode(), False),  # hex of one case: 32 or more
        (b"279a2e9d-83b3-4416-9e2d-f721593e42a0", False),  # a UUID
        (b"arn:aws:iam::123456789012:user/Dev1234", False),
        (b"/usr/local/share/keys/a1b2c3d4e5f6a7b8", False),
        (b"Q" * 19 + b"1", False),  # masking
    ],
)
def test_credential_value(value: bytes, expected: bool) -> None:
    assert credential_value(value) is expected
