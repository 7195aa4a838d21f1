"""All of fak's MCP (tier T3): fak as an MCP server (``server``, its tool bodies in ``tools``)
and fak's MCP proxy in front of the MCP servers a client already runs (the rest).

``McpProxy`` serves one MCP server to the client (stdio or Streamable HTTP) on the official SDK
and holds a supervised client session to each downstream server in an ``mcpServers`` config;
every ``tools/call`` is a kernel syscall and every result passes the kernel's result admission.
``serve_proxy_stdio`` runs it on this process's stdin/stdout.
"""

from fak.gateway.mcp.catalog import Catalog, Entry, ToolState, tool_digest
from fak.gateway.mcp.config import (
    DEFAULT_SEPARATOR,
    OnChange,
    ProxyConfig,
    ProxyConfigError,
    ServerSpec,
    load_proxy_config,
    load_proxy_config_file,
    single_server_config,
)
from fak.gateway.mcp.downstream import Downstream, DownstreamHooks, DownstreamUnavailable
from fak.gateway.mcp.proxy import PROXY_NAME, McpProxy, serve_proxy_stdio

__all__ = [
    "DEFAULT_SEPARATOR",
    "PROXY_NAME",
    "Catalog",
    "Downstream",
    "DownstreamHooks",
    "DownstreamUnavailable",
    "Entry",
    "McpProxy",
    "OnChange",
    "ProxyConfig",
    "ProxyConfigError",
    "ServerSpec",
    "ToolState",
    "load_proxy_config",
    "load_proxy_config_file",
    "serve_proxy_stdio",
    "single_server_config",
    "tool_digest",
]
