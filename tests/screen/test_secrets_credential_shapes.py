"""Credential-carrying shapes added from the train misses (issue 25, branch i25-sec3): a
password or token inside a larger structure — npm's and Docker's base64 ``_auth`` / ``"auth"``,
curl's ``-u user:password``, Oracle's thin JDBC string, a .netrc entry, SQL's ``IDENTIFIED BY``,
the Authorization header as a JSON member, a PEM key inside a JSON-encoded string, Slack's
workflow webhooks and Discord bot tokens. Each shape is held as its documentation writes it (the
values here are made up); placeholders, variables, names and prose in the same shape pass."""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from fak.screen.secrets import find_secrets

RNG = random.Random(2513)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


PASSWORD = rand(ALNUM, 14)
PEM = (
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    + rand(ALNUM + "+/", 64)
    + "\n-----END PRIVATE KEY-----\n"
)
SERVICE_ACCOUNT = json.dumps(
    {
        "type": "service_account",
        "project_id": "acme-prod",
        "private_key_id": rand(HEX, 40),
        "private_key": PEM,
        "client_email": "deploy@acme-prod.iam.gserviceaccount.com",
    }
)
CERTIFICATE = (
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE" + rand(ALNUM + "+/", 300) + "\n"
    "-----END CERTIFICATE-----\n"
)
KEY_B64 = b64(PEM + rand(ALNUM, 200))
KUBECONFIG = (
    "users:\n- name: admin\n  user:\n    client-certificate-data: "
    + b64(CERTIFICATE)
    + "\n    client-key-data: "
    + KEY_B64
    + "\n"
)
USER_ID = str(RNG.randrange(10**17, 10**19))
DISCORD = (
    base64.urlsafe_b64encode(USER_ID.encode()).decode().rstrip("=")
    + "."
    + rand(ALNUM + "_-", 6)
    + "."
    + rand(ALNUM + "_-", 38)
)

# kind -> text holding one credential of a new shape; the span must be the secret
HELD: dict[str, tuple[str, str, str]] = {
    "npmrc_auth": (
        "assignment",
        "//npm.corp.example/:_auth=" + b64("ci-bot:" + PASSWORD),
        b64("ci-bot:" + PASSWORD),
    ),
    "npmrc_auth_bare": ("assignment", "_auth = " + b64("ci:" + PASSWORD), b64("ci:" + PASSWORD)),
    "docker_config_auth": (
        "assignment",
        json.dumps({"auths": {"ghcr.io": {"auth": b64("ci:" + PASSWORD)}}}),
        b64("ci:" + PASSWORD),
    ),
    "docker_config_auth_escaped": (
        "assignment",
        json.dumps({"value": json.dumps({"auths": {"r.io": {"auth": b64("u:" + PASSWORD)}}})}),
        b64("u:" + PASSWORD),
    ),
    "curl_u": (
        "login_pair",
        f"curl -u deploy:{PASSWORD} https://api.example.com/v1/items",
        PASSWORD,
    ),
    "curl_user_quoted": (
        "login_pair",
        f"curl -s --user 'deploy:{PASSWORD}' https://api.example.com",
        PASSWORD,
    ),
    "curl_user_equals": ("login_pair", f'curl --user="ci:{PASSWORD}" https://x', PASSWORD),
    "curl_proxy_user": ("login_pair", f"curl -U proxy:{PASSWORD} https://x", PASSWORD),
    "curl_continued_line": (
        "login_pair",
        f"curl -X POST \\\n  -u svc:{PASSWORD} \\\n  https://api.example.com/token",
        PASSWORD,
    ),
    "curl_token_as_user": (
        "login_pair",
        "curl https://api.example.com/v1/charges -u " + "k_" + rand(ALNUM, 24) + ":",
        "",
    ),
    "password_option": (
        "login_pair",
        f"docker login -u ci --password {PASSWORD} registry.example.com",
        PASSWORD,
    ),
    "powershell_password": (
        "login_pair",
        f"Connect-VIServer -Server vc01 -User ops@vsphere.local -Password {PASSWORD}",
        PASSWORD,
    ),
    "token_as_url_user": (
        "url_credentials",
        "GEMFURY_URL=https://" + PASSWORD + rand(ALNUM, 6) + ":@pypi.fury.io/acme/",
        "",
    ),
    "token_option": (
        "login_pair",
        "kubeadm join 10.0.0.1:6443 --token be8dfd.da8a689a46edc282 --discovery-token-unsafe",
        "be8dfd.da8a689a46edc282",
    ),
    "api_key_option": ("login_pair", "heroku --api-key " + PASSWORD + "Qz81", ""),
    "token_secret_option": (
        "login_pair",
        "modal token set --token-id ak-"
        + rand(ALNUM, 22)
        + " --token-secret as-"
        + rand(ALNUM, 22),
        "",
    ),
    "bootstrap_token_assignment": (
        "assignment",
        "BOOTSTRAP_TOKEN=be8dfd.da8a689a46edc282",
        "be8dfd.da8a689a46edc282",
    ),
    "oracle_thin": (
        "login_pair",
        f"jdbc:oracle:thin:app/{PASSWORD}@//db.internal:1521/ORCL",
        PASSWORD,
    ),
    "netrc": (
        "login_pair",
        f"machine api.example.com\n  login deploy\n  password {PASSWORD}\n",
        PASSWORD,
    ),
    "netrc_one_line_json": (
        "login_pair",
        json.dumps({"netrc": f"machine git.example.com\nlogin ci\npassword {PASSWORD}\n"}),
        PASSWORD,
    ),
    "sql_identified_by": (
        "login_pair",
        f"CREATE USER 'app'@'%' IDENTIFIED BY '{PASSWORD}';",
        PASSWORD,
    ),
    "sql_identified_with": (
        "login_pair",
        f"ALTER USER app IDENTIFIED WITH caching_sha2_password BY '{PASSWORD}';",
        PASSWORD,
    ),
    "sql_with_password": (
        "login_pair",
        f"CREATE ROLE app WITH LOGIN PASSWORD '{PASSWORD}';",
        PASSWORD,
    ),
    "authorization_json_member": (
        "auth_header",
        json.dumps({"headers": {"Authorization": "Basic " + b64("ci:" + PASSWORD)}}),
        b64("ci:" + PASSWORD),
    ),
    "authorization_dict_item": (
        "auth_header",
        "headers['Authorization'] = 'Token " + PASSWORD + rand(ALNUM, 10) + "'",
        "",
    ),
    "db_pass": ("assignment", f"DB_PASS={PASSWORD}", PASSWORD),
    "passphrase": ("assignment", f'GPG_PASSPHRASE="{PASSWORD}"', PASSWORD),
    "service_account_escaped": ("private_key", json.dumps({"value": SERVICE_ACCOUNT}), ""),
    "kubeconfig_client_key": ("private_key", KUBECONFIG, KEY_B64),
    "secret_in_json_base64": ("private_key", json.dumps({"tls.key": KEY_B64}), KEY_B64),
    "base64_key_after_an_escape": (
        "private_key",
        json.dumps({"out": "wrote key.b64:\n" + KEY_B64 + "\n"}),
        KEY_B64,
    ),
    "slack_workflow": (
        "slack_webhook",
        "https://hooks.slack.com/workflows/T02QW7RTZ/A05KP3LMN8Q/468813957654827031/"
        + rand(ALNUM, 24),
        "",
    ),
    "slack_trigger": (
        "slack_webhook",
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/triggers/T02QW7RTZ/5730381520834/"
        + rand(HEX, 32),
        "",
    ),
    "discord_bot_token": ("vendor_token", "client.run('" + DISCORD + "')", DISCORD),
    "discord_bot_header": ("vendor_token", "Authorization: Bot " + DISCORD, DISCORD),
}


@pytest.mark.parametrize("case", sorted(HELD))
def test_each_credential_shape_is_held(case: str) -> None:
    kind, text, secret = HELD[case]
    raw = text.encode()
    hits = find_secrets(raw)
    assert [h.kind for h in hits] == [kind], case
    if secret:  # base64 padding may be left out of the span: it carries no secret
        assert raw[hits[0].start : hits[0].end] == secret.rstrip("=").encode()


def test_a_key_named_in_a_value_after_an_auth_variable_is_still_held() -> None:
    # ``SERVICE_AUTH=`` must not start npm's ``_auth`` and hide the API key after it
    text = (
        b"SERVICE_AUTH=HEROKU_API_KEY: " + rand(HEX, 8).encode() + b"-4e0e-4a06-b892-75cac2387ce5"
    )
    assert [h.kind for h in find_secrets(text)] == ["assignment"]


def test_a_discord_shape_whose_first_part_is_no_user_id_passes() -> None:
    # a random first part (scanners' generated strings): not base64 of a decimal id
    fake = "N" + rand(ALNUM, 23) + "." + rand(ALNUM, 6) + "." + rand(ALNUM, 27)
    assert not base64.urlsafe_b64decode(fake.split(".")[0] + "==").isdigit()
    assert find_secrets(f"client.run('{fake}')".encode()) == []


PASSES = [
    # curl: placeholders, variables, names, no password, not curl's option
    "curl -u user:password https://api.example.com",
    "curl -u $USER:$PASS https://api.example.com",
    'curl -u "${USER}:${API_TOKEN}" https://api.example.com',
    "curl -u <user>:<password> https://api.example.com",
    "curl -u admin:admin https://api.example.com",
    "curl -u deploy: https://api.example.com",
    "curl -u : --negotiate https://api.example.com",
    "docker run -u www-data:www-data nginx",
    "docker exec -u postgres:postgres db psql -c 'select 1'",
    f"docker run -u 1000:1000 img && ssh -u ci:{PASSWORD} host",
    "git push -u origin main",
    # npm / Docker ``auth``: not base64 user:password, placeholders, names sharing ``_auth``
    "_auth = ${NPM_AUTH}",
    "_auth=" + b64("username:password"),
    "_auth=" + b64("user:"),
    "self._auth = HTTPBasicAuth(user, pw)",
    "self._auth = base64.b64encode(credentials)",
    'self._author = "SomeoneImportant1"',
    "_authority = SomeAuthorityX1",
    '{"auth": "oauth2-client-credentials"}',
    '{"auths": {"quay.io": {"auth": "' + b64("user12:token34567890") + '"}}}',
    # a password option: stdin, a variable, a call, prose, a documented default, a flag
    "echo $PW | docker login -u ci --password-stdin registry.example.com",
    "mysql --password $DB_PASSWORD -h db",
    'New-LocalUser -Password (ConvertTo-SecureString "x" -AsPlainText -Force)',
    "use the --password option to set it",
    "Connect-VIServer -Server vc01 -User administrator@vsphere.local -Password VMware1!",
    "curl -u admin:P@ssw0rd https://api.example.com",
    "run it with --password --verbose",
    # token options: a variable, a file, a name, stdin, a documentation token, punctuation
    "vault login --token $VAULT_TOKEN",
    "kubelet --token-file /var/run/secrets/token",
    "docker buildx build --secret id=npmrc,src=.npmrc .",
    "gh auth login --with-token < token.txt",
    "kubeadm join --tls-bootstrap-token abcdef.1234567890abcdef",
    "the --token option takes one argument",
    "a -token .UKhdmQDj5wq3qMHMzzQ4 b",
    "settings.SECRET_KEY = env.API_KEY",
    # Oracle: the documentation's scott/tiger, no user, a variable
    "jdbc:oracle:thin:scott/tiger@localhost:1521:orcl",
    "jdbc:oracle:thin:@//db:1521/ORCL",
    "jdbc:oracle:thin:app/${DB_PASSWORD}@//db:1521/ORCL",
    # .netrc: a variable, a placeholder, prose
    "machine h.example.com login u password $NETRC_PASSWORD",
    "machine api.github.com login octocat password 012345abcdef",
    "the machine learning login password policy is strict",
    # SQL: placeholders, prose with the same words
    "CREATE USER app IDENTIFIED BY 'password';",
    "This flaw, identified by CVE-2024-3094, was found in xz",
    "the malware encrypts its traffic with password 'warzone160'",
    # the Authorization header built in code
    'headers = {"Authorization": "Bearer " + new_access_token["access_token"]}',
    'headers = {"Authorization": f"Bearer {token}"}',
    '{\\"Authorization\\":\\"bearer \\"+new_mod_access[\\"access_token\\"]}',
    # ``pass`` in code (booleans, passes), files holding a password, other words
    "const pass = latencyMs <= assertion.threshold;",
    "p90_pass = p90_ic_to_pc <= max_p90_ic_to_pc",
    "def step(self, shrink_pass: ShrinkPass, *, random_order=False):",
    "DB_PASS_FILE=/run/secrets/db_password",
    "bypass=Xk9mQ2vLp8sTz4",
    # Slack's documentation URL
    "https://hooks.slack.com/triggers/T0123456789/3141592653589/c6e6c0d868b3054ca0f4611a5dbadaf",
    # URIs without a real password
    "postgres://app:@db.internal:5432/app",
    "postgres://app@db.internal:5432/app",
    "redis://:${REDIS_PASSWORD}@cache:6379",
    "mongodb://<user>:<password>@cluster0.example.net",
    # base64 of PEM armour: a certificate, the armour alone, inside a longer base64 run
    "tls.crt: " + b64(CERTIFICATE),
    "echo LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ== | base64 -d",
    "data: QUJD" + KEY_B64,
    # Discord-shaped placeholders
    "DISCORD_TOKEN=MTIzNDU2Nzg5MDEyMzQ1Njc4.XXXXXX.XXXXXXXXXXXXXXXXXXXXXXXXXXX",
]


@pytest.mark.parametrize("text", PASSES)
def test_lookalikes_of_the_new_shapes_pass(text: str) -> None:
    assert find_secrets(text.encode()) == [], text
