"""fak.gateway (tier T3): the ASGI app in front of a model — routes per wire and resource
(``routes``), all MCP (``mcp``), upstream clients and the proxy planner (``upstream``), and the
plumbing every door shares (HTTP limits, auth, metrics, the access log, the kernel boundary).
The repository's ARCHITECTURE.md is the map."""
