"""Vendor token prefixes taken from other scanners' rules (tier T1): data, no logic.

Each entry is a prefix (an RE2 / ``re`` fragment that both engines read alike), the fewest
random characters a real token has after it, and whether that part is letters and digits only.
``fak.screen.secrets`` folds the prefixes into its one ``vendor_token`` RE2 group and judges the
token behind a prefix with these numbers. The prefixes come from the train misses of
llm-guard's secrets plugins, trufflehog3's rules and betterleaks' rules (issue 25, branch
i25-sec). Public identifiers (publishable keys, client ids, account ids, instance URLs) are
left out, and so are prefixes that ordinary names share when the rest cannot tell them apart
(``cli_``, ``re_``, ``BSA``, ``STS.``, hex-looking ``4b1d``).
"""

from __future__ import annotations

import re

__all__ = ["PREFIXED", "PREFIXED_ANY", "PREFIXED_AT", "PREFIXED_RE2"]

# (prefix, least random characters after it, letters and digits only)
PREFIXED: tuple[tuple[bytes, int, bool], ...] = (
    # llm-guard's secrets plugins (gitleaks' rules) and trufflehog3's
    (rb"p8e-", 32, True),  # Adobe client secret
    (rb"AGE-SECRET-KEY-(?:PQ-)?1", 58, True),  # age (``PQ-``: post-quantum)
    (rb"LTAI", 12, True),  # Alibaba access key id
    (rb"dapi", 32, False),  # Databricks (``-<digit>`` may follow)
    (rb"duffel_(?:test|live)_", 40, False),
    (rb"EZ[AT]K", 50, True),  # EasyPost
    (rb"api_org_", 30, True),  # Hugging Face organization token
    (rb"pscale_(?:tkn|oauth|pw)_", 30, False),  # PlanetScale
    (rb"pnu_", 36, True),  # Prefect
    (rb"pul-", 40, True),  # Pulumi
    (rb"rdme_", 64, True),  # ReadMe
    (rb"rubygems_", 48, True),
    (rb"tk-us-", 40, False),  # Scalingo
    (rb"xkeysib-", 64, False),  # Brevo (Sendinblue)
    (rb"shippo_(?:live|test)_", 40, True),
    (rb"shp(?:at|ca|pa|ss)_", 32, True),  # Shopify
    (rb"hv[sbr]\.", 24, False),  # HashiCorp Vault service / batch / recovery token
    (rb"ya29\.", 20, False),  # Google OAuth access token
    (rb"access_token\$production\$", 16, False),  # Braintree
    # betterleaks' rules (gitleaks' format)
    (rb"AIK_(?:CI|CLIENT|SECRET)_", 20, True),  # Aikido
    (rb"apify_api_", 30, True),
    (rb"cmVmd", 59, True),  # JFrog reference token
    (rb"aact_(?:prod|hmlg)_", 20, False),  # Asaas (after a ``$``)
    (rb"ATAT", 100, False),  # Atlassian API token
    (rb"bedrock-api-key-", 20, False),  # Amazon Bedrock
    (rb"BBDC-", 32, False),  # Bitbucket Data Center
    (rb"bk(?:aa|aj|ar|ct|pt|pat|ua)_", 40, False),  # Buildkite
    (rb"cnvca", 40, False),  # Canva client secret
    (rb"sk_car_", 20, False),  # Cartesia
    (rb"csk-", 48, True),  # Cerebras
    (rb"CCIPAT_", 40, False),  # CircleCI
    (rb"cf[ua]t_", 40, True),  # Cloudflare
    (rb"csa_", 36, True),  # Cloudsmith
    (rb"CCDB1_", 40, False),  # CockroachDB Cloud
    (rb"AstraCS:", 20, False),  # DataStax Astra
    (rb"ddp_", 36, True),  # Deno
    (rb"dvc_(?:client|mobile|server)_", 12, True),  # DevCycle
    (rb"cog_", 52, True),  # Devin
    (rb"SWMTKN-1-", 50, False),  # Docker swarm join token
    (rb"dckr_(?:pat|oat)_", 27, False),  # Docker Hub
    (rb"essu_", 60, False),  # Elastic Cloud
    (rb"EAA[MC]", 100, True),  # Facebook page token
    (rb"figd_", 38, False),  # Figma
    (rb"AQ\.Ab8R", 40, False),  # Google Cloud express-mode API key (Gemini: ``N6`` next)
    (rb"gsk_", 52, True),  # Groq
    (rb"HRKU-AA", 58, False),  # Heroku
    (rb"ico-", 32, True),  # Infracost
    (rb"s-s4t2(?:ud|af)-", 64, True),  # 42 intra
    (rb"ion_", 42, True),  # Ionic
    (rb"lsv2_(?:pt|sk)_", 40, False),  # LangSmith
    (rb"sk-lf-", 36, False),  # Langfuse secret key
    (rb"lip_", 16, False),  # Lichess
    (rb"llx-", 44, True),  # LlamaCloud
    (rb"mlsn\.", 30, True),  # MailerSend
    (rb"mercury_production_", 40, False),
    (rb"mergify_application_key_", 40, False),
    (rb"eyJtaXJv", 30, False),  # Miro
    (rb"mdb_sa_sk_", 40, False),  # MongoDB Atlas service account secret
    (rb"napi_", 64, True),  # Neon
    (rb"ntn_", 46, True),  # Notion
    (rb"nvapi-", 60, False),  # NVIDIA
    (rb"nyk_", 67, True),  # Nylas
    (rb"api_live(?:_ca|_us)?\.", 20, False),  # Onfido
    (rb"sk-or-v1-", 64, True),  # OpenRouter
    (rb"sha256~", 43, False),  # OpenShift user token
    (rb"pdl_(?:live|sdbx)_apikey_", 40, False),  # Paddle
    (rb"pplx-", 48, True),  # Perplexity
    (rb"persona_production_", 20, False),
    (rb"pcsk_", 60, False),  # Pinecone
    (rb"pina_", 20, False),  # Pinterest
    (rb"polar_(?:at|oat|pat)_", 20, False),
    (rb"phx_", 41, False),  # PostHog personal key
    (rb"ramp_sec_", 48, True),
    (rb"rpa_", 30, True),  # redirect.pizza, RunPod
    (rb"rnd_", 28, True),  # Render
    (rb"r8_", 37, True),  # Replicate
    (rb"rootly_", 64, True),
    (rb"samsara_api_", 26, True),
    (rb"sgp_", 40, False),  # Segment, Sourcegraph
    (rb"sntry[su]_", 64, False),  # Sentry
    (rb"sm_(?:aat|pat|sat)_", 16, True),  # SettleMint
    (rb"sb_secret_", 31, False),  # Supabase
    (rb"sbp_", 40, False),
    (rb"tskey-", 20, False),  # Tailscale
    (rb"tss_", 20, False),  # Thunderstore
    (rb"tgp_v1_", 43, False),  # Together AI
    (rb"unkey_", 20, True),
    (rb"ucat_", 24, True),  # UpCloud
    (rb"vtwn_", 20, False),  # Val Town
    (rb"vc[kaprci]_", 56, False),  # Vercel
    (rb"waka_", 36, True),  # WakaTime
    (rb"wandb_v1_", 77, False),  # Weights & Biases
    (rb"xai-", 70, False),  # xAI
    (rb"xnd_(?:production|development)_", 56, True),  # Xendit
    (rb"zpka_", 40, False),  # Zuplo
    (rb"pat[A-Za-z0-9]{14}\.", 64, True),  # Airtable personal access token: 64 hex
    (rb"[ps]at\.[A-Za-z0-9_-]{22}\.", 40, False),  # Harness
    (rb"A3-[A-Z0-9]{6}-", 26, False),  # 1Password secret key
    (rb"EXO", 24, True),  # Exoscale
    (rb"00[A-Za-z0-9]{13}!", 80, False),  # Salesforce access token
    (rb"SWMKEY-1-", 40, False),  # Docker swarm unlock key
    (rb"apk_", 80, False),  # Devin service API key
    (rb"_gitlab_session=", 32, True),  # a GitLab session cookie
    # Kingfisher's rules (issue 25, branch i25-sec2)
    (rb"ops_eyJ", 80, False),  # 1Password service-account token
    (rb"1PRK-", 60, False),  # 1Password recovery key: 13 groups of 4
    (rb"ABSKQmVkcm9ja0FQSUtleS", 80, False),  # Amazon Bedrock long-lived key
    (rb"ATBB", 32, True),  # Bitbucket app password
    (rb"cfxk_", 20, False),  # Cfx.re
    (rb"CCIPRJ_", 60, False),  # CircleCI project token
    (rb"odt_", 32, True),  # Dependency-Track
    (rb"dub_", 24, True),  # Dub
    (rb"dt0[a-z][0-9]{2}\.", 72, False),  # Dynatrace (``dt0c01.`` is whispers')
    (rb"ajkey_", 26, True),  # Arcjet
    (rb"APP_USR-", 30, False),  # Mercado Pago access token
    (rb"(?:SB-)?Mid-server-", 10, False),  # Midtrans server key
    (rb"ovsx(?:at|p)_", 36, False),  # Open VSX
    (rb"ph[sar]_", 40, True),  # PostHog project / app / refresh secrets
    (rb"PMAT-", 26, True),  # Postman collection token
    (rb"RGAPI-", 36, False),  # Riot Games
    (rb"sq[pua]_", 40, True),  # SonarQube
    (rb"slk_", 64, True),  # Sourcegraph
    (rb"tvly-", 32, True),  # Tavily
    (rb"tgpat_", 48, True),  # Tolgee
    (rb"tk\.eyJ1Ijoi", 32, False),  # Mapbox temporary token
    (rb"pat-(?:na|eu|ap)[0-9]-", 36, False),  # HubSpot private app token
    (rb"signkey-(?:prod|test|branch)-", 64, True),  # Inngest signing key
    (rb"jina_", 60, True),  # Jina AI
    (rb"flp_", 46, True),  # FriendliAI
    (rb"xa[ap]t-", 36, False),  # Axiom
    (rb"fw_", 24, True),  # Fireworks AI
    (rb"oy2", 43, True),  # NuGet API key
    (rb"p\.eyJ1I", 80, False),  # Tinybird
    (rb"sl\.", 130, False),  # Dropbox short-lived access token
    (rb"secret-(?:test|live)-", 35, False),  # Stytch
    (rb"secret-", 40, True),  # Statsig server secret
    (rb"cio", 32, True),  # crates.io
    (rb"key_(?:live|test)_", 32, True),  # Branch
    (rb"sk_", 48, True),  # ElevenLabs (Stripe's ``sk_live_`` is its own kind)
    (rb"pat_", 64, True),  # Coze
    (rb"sct_(?:rwa|rs|r|w)_", 40, False),  # Shortcut
    (rb"VF\.DM\.", 30, False),  # Voiceflow
    (rb"hawk\.", 30, False),  # StackHawk
    (rb"wrka-", 40, False),  # Workato
    (rb"v1\.0-", 140, False),  # Cloudflare origin CA key
    (rb"aio_", 28, True),  # Adafruit IO
    # issue 25, branch i25-sec4 (Kingfisher's, llm-guard's and betterleaks' train misses)
    (rb"tfp_", 40, False),  # Typeform personal access token
    (rb"gcntfy-", 40, False),  # GC Notify: ``gcntfy-<key name>-<service id>-<secret>``
)  # fmt: skip

PREFIXED_RE2: bytes = b"|".join(prefix for prefix, _, _ in PREFIXED)
"""The prefixes as one alternation, for the ``vendor_token`` RE2 group."""
PREFIXED_AT = re.compile(b"|".join(b"(" + prefix + b")" for prefix, _, _ in PREFIXED))
"""Which entry a prefix at a position is (``lastindex`` - 1)."""
PREFIXED_ANY = re.compile(b"(?:" + PREFIXED_RE2 + b")")
"""Whether a prefix starts at a position: the same matches as ``PREFIXED_AT`` without its 147
groups, ~20x faster where none does (most places), so ``PREFIXED_AT`` runs only to name one."""
