"""Public test doubles for fak's seams (tier T4), shipped like httpx's ``MockTransport`` so a
user's own tests can use them: ``upstream.MockUpstream`` (a recording OpenAI + Anthropic
upstream on a loopback socket) and ``planner.MockPlanner`` (a scripted planner). Product
packages import nothing from here; only the CLI's ``--mock`` and the tests do."""
