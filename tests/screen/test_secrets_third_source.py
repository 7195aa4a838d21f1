"""Formats added from a third train source (issue 25, branch i25-sec): llm-guard's secrets
plugins and trufflehog3's rules. Each format is caught in its documented shape; its
placeholders and look-alikes (hashes, ids, base64, prose) are admitted."""

from __future__ import annotations

import base64
import hashlib
import random
import string

import pytest

from fak.screen import find_secret
from fak.screen.secrets import find_secrets

RNG = random.Random(2511)
ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


# vendor -> a line holding its credential, in the vendor's documented shape
VENDOR_CASES: dict[str, str] = {
    "adobe_client_secret": "ADOBE_CLIENT_SECRET=p8e-" + rand(LOWER, 32),
    "age_secret_key": "# key\nAGE-SECRET-KEY-1" + rand(BECH32, 58),
    "alibaba_access_key_id": "accessKeyId: LTAI" + rand(ALNUM, 20),
    "databricks_token": "token = dapi" + rand("abcdefgh0123456789", 32),
    "duffel_token": "Authorization: duffel_live_" + rand(ALNUM + "-_", 43),
    "easypost_key": "EASYPOST=EZAK" + rand(LOWER, 54),
    "huggingface_org_token": "hub: api_org_" + rand(string.ascii_letters, 34),
    "planetscale_password": "DATABASE_PASSWORD=pscale_pw_" + rand(ALNUM + "_-", 43),
    "prefect_key": "PREFECT_API_KEY=pnu_" + rand(LOWER, 36),
    "pulumi_token": "PULUMI_ACCESS_TOKEN=pul-" + rand(HEX, 40),
    "readme_key": "readme: rdme_" + rand(LOWER, 70),
    "rubygems_key": ":rubygems_api_key: rubygems_" + rand(HEX, 48),
    "scalingo_token": "SCALINGO_API_TOKEN=tk-us-" + rand(ALNUM + "-_", 48),
    "brevo_key": "api-key: xkeysib-" + rand(HEX, 64) + "-" + rand(LOWER, 16),
    "shippo_token": "ShippoToken shippo_live_" + rand(HEX, 40),
    "shopify_token": "X-Shopify-Access-Token: shpat_" + rand(HEX, 32),
    "vault_token": "VAULT_TOKEN=hvs." + rand(ALNUM + "_-", 91),
    "google_oauth_access_token": "Authorization: Bearer ya29." + rand(ALNUM + "-_", 120),
    "braintree_token": "BT=access_token$production$" + rand(LOWER, 16) + "$" + rand(HEX, 32),
    "mailchimp_key": "apikey " + rand(HEX, 32) + "-us21",
    # betterleaks' rules
    "groq_key": "GROQ_API_KEY=gsk_" + rand(ALNUM, 52),
    "notion_token": "notion: ntn_" + rand("0123456789", 11) + rand(ALNUM, 35),
    "openrouter_key": "OPENROUTER_API_KEY=sk-or-v1-" + rand(HEX, 64),
    "docker_hub_pat": "docker login -p dckr_pat_" + rand(ALNUM + "_-", 27),
    "figma_pat": "X-Figma-Token: figd_" + rand(ALNUM + "_-", 40),
    "tailscale_key": "TS_AUTHKEY=tskey-auth-" + rand(ALNUM, 14) + "-" + rand(ALNUM, 30),
    "vercel_token": "token: vcp_" + rand(ALNUM + "_-", 56),
    "sentry_user_token": "SENTRY_AUTH_TOKEN=sntryu_" + rand(HEX, 64),
    "perplexity_key": "Authorization: pplx-" + rand(ALNUM, 48),
    "cloudflare_token": "CF_API_TOKEN=cfut_" + rand(ALNUM, 40) + rand(HEX, 8),
    "langsmith_key": "LANGSMITH_API_KEY=lsv2_pt_" + rand(HEX, 32) + "_" + rand(HEX, 10),
    "heroku_v2_key": "HEROKU_API_KEY=HRKU-AA" + rand(ALNUM + "_-", 58),
    "replicate_token": "REPLICATE_API_TOKEN=r8_" + rand(ALNUM, 37),
    "asaas_key": "ASAAS=$aact_prod_" + rand(ALNUM + "_-", 60),
    "airtable_pat": "AIRTABLE=pat" + rand(ALNUM, 14) + "." + rand(HEX, 64),
    "astra_token": "token: AstraCS:" + rand(ALNUM, 24) + ":" + rand(HEX, 64),
    "openshift_token": "oc login --token=sha256~" + rand(ALNUM + "_-", 43),
    "sentry_org_token": "SENTRY_AUTH_TOKEN=sntrys_eyJpYXQiO" + rand(ALNUM + "+/", 120),
    "gitlab_session": "Cookie: _gitlab_session=" + rand(LOWER, 32),
    "onepassword_secret_key": "A3-"
    + rand("ABCDEFGHJKLMNPQRSTVWXYZ23456789", 6)
    + "-"
    + "-".join(rand("ABCDEFGHJKLMNPQRSTVWXYZ23456789", n) for n in (11, 5, 5, 5)),
}


@pytest.mark.parametrize("vendor", sorted(VENDOR_CASES))
def test_each_new_vendor_format_is_held(vendor: str) -> None:
    text = ("ok: build 4471 finished\n" + VENDOR_CASES[vendor] + "\nbye\n").encode()
    hits = find_secrets(text)
    assert "vendor_token" in {h.kind for h in hits}, vendor


def test_a_prefix_after_a_json_newline_escape_is_held_from_the_prefix() -> None:
    token = "gsk_" + rand(ALNUM, 52)
    text = ('{"out": "first line\\n' + token + '\\nlast"}').encode()
    (hit,) = find_secrets(text)
    assert text[hit.start : hit.end] == token.encode()


def test_a_prefix_glued_to_a_word_is_not_a_token_start() -> None:
    assert find_secret(("xgsk_" + rand(ALNUM, 52)).encode()) is None
    assert find_secret(("abcdapi" + rand("abcdefgh0123456789", 32)).encode()) is None


def test_a_mailchimp_key_is_spanned_from_its_hex_start() -> None:
    key = rand(HEX, 32) + "-us6"
    text = ("log: sent with " + key + " ok").encode()
    (hit,) = find_secrets(text)
    assert text[hit.start : hit.end] == key.encode()


WIDENED = {
    # SendGrid's keys are ``SG.`` + 22 + ``.`` + 43; llm-guard's and whispers' rules take any run
    "sendgrid_key": "SENDGRID=SG." + rand(LOWER + "-_.", 66),
    # Telegram bot ids have grown past ten digits (llm-guard: 5 to 16)
    "telegram_bot_token": "bot " + rand("123456789", 12) + ":AA" + rand(ALNUM + "_-", 33),
}


@pytest.mark.parametrize("kind", sorted(WIDENED))
def test_widened_shapes_are_held(kind: str) -> None:
    assert kind in {h.kind for h in find_secrets(WIDENED[kind].encode())}


def test_a_mailchimp_key_after_a_json_escape_is_held() -> None:
    key = rand(HEX, 32) + "-us16"
    text = ('{"value": "mailchimp\\r' + key + '"}').encode()
    (hit,) = find_secrets(text)
    assert text[hit.start : hit.end] == key.encode()


def test_a_mailchimp_key_of_any_lower_case_letters_is_held() -> None:
    key = rand(LOWER, 32) + "-us13"  # detect-secrets' rule: [0-9a-z]{32}
    assert {h.kind for h in find_secrets(("mc " + key).encode())} == {"vendor_token"}


def test_widened_github_pat_and_twilio_shapes() -> None:
    # scanners accept a fine-grained PAT's 82 characters in any order, and upper-case hex SIDs
    assert {h.kind for h in find_secrets(b"pat github_pat_" + rand(ALNUM, 82).encode())} == {
        "github_pat"
    }
    sid = ("SK" + rand("0123456789abcdefABCDEF", 32)).encode()
    assert {h.kind for h in find_secrets(b"twilio: " + sid + b" ok")} == {"twilio_key"}


LOOKALIKES = [
    # documentation placeholders of the new formats
    b"ADOBE_CLIENT_SECRET=p8e-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    b"export DATABRICKS_TOKEN=dapi<your-token>",
    b"PULUMI_ACCESS_TOKEN=pul-YOUR_TOKEN_HERE",
    b"X-Shopify-Access-Token: shpat_00000000000000000000000000000000",
    b"VAULT_TOKEN=hvs.EXAMPLE_TOKEN_REPLACE_ME",
    b"age keys look like AGE-SECRET-KEY-1... and stay in key.txt",
    # too short for the vendor's token: words and names that share a prefix
    b"see the dapi2 driver and LTAI2024 notes",
    b"pnu_setup and pul-request and tk-us-east",
    b"the hvs.read() call and ya29.example",
    # hashes and ids beside a Mailchimp data centre: a 64-hex digest, a short one (a bare
    # 32-hex digest then ``-us<n>`` is a Mailchimp key's very shape, and is held)
    ("sha256 " + hashlib.sha256(b"x").hexdigest() + "-us1").encode(),
    ("etag " + hashlib.md5(b"y").hexdigest()[:31] + "-us2").encode(),
    b"0123456789abcdef0123456789abcdef-us1",  # a counting placeholder
    b"region en-us1 and fr-us2",
    b"SKIPPED: 12 tests, see ACCEPTANCE.md",
    # near the widened SendGrid and Telegram shapes: names and a timestamp before a slug
    b"SG.configureDefaultSettings(); SG.objects.filter(name=1)",
    b"at 1700000000:deploy-the-staging-cluster-and-wait-now",
    b"12345:abcdefghijklmnopqrstuvwxyzabcdef",
    # names in code and style sheets that share betterleaks' short prefixes
    b"rnd_seed_value_for_the_training_loop = 42",
    b"ion_channel_conductance_model_v2(cell)",
    b'<i class="ico-arrow-left-small-size-variant"></i>',
    b"model = DDP(net, ddp_find_unused_parameters_true=True)",
    b"csa_config_loader_for_the_cloudsmith_api.yaml",
    b"see the sk-lf- prefix, the pplx- prefix and tskey-auth- keys in the docs",
    b"GROQ_API_KEY=gsk_your_api_key_here",
    b"NOTION_TOKEN=ntn_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    b"print an A3-SIZED-PAPER-IS-NOT-LARGE-ENOUGH warning",
    b"the pattern.match() call and the EXOTIC_PARTICLES_CATALOGUE table",
    b"image: registry/app@sha256~latest and sha256~ digests",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_of_the_new_formats_pass(text: bytes) -> None:
    assert find_secret(text) is None, [(h.kind, text[h.start : h.end]) for h in find_secrets(text)]


def test_new_short_prefixes_do_not_fire_inside_base64() -> None:
    rng = random.Random(25)
    for prefix in (b"LTAI", b"dapi", b"EZAK", b"pnu_", b"pul-", b"hvs."):
        for _ in range(40):
            blob = base64.b64encode(rng.randbytes(300))
            at = rng.randrange(8, 300)
            body = blob[:at] + rng.choice([b"+", b"/"]) + prefix + blob[at:]
            pem = b"-----BEGIN CERTIFICATE-----\n" + body + b"\n-----END CERTIFICATE-----"
            assert "vendor_token" not in {h.kind for h in find_secrets(pem)}, body
