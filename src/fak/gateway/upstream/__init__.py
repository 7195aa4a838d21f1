"""What the gateway talks to upstream (tier T3): ``client`` is the HTTP client seam (aiohttp or
httpx behind one Protocol) and ``planner`` the proxy planner that forwards a turn to an
OpenAI-compatible or Anthropic model and parses its answer. No route or kernel logic here."""
