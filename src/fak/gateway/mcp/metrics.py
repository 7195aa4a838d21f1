"""Prometheus series of the MCP proxy, per downstream server and tool (tier T3).

``ProxyCollector(proxy)`` is registered on ``fak serve``'s registry when ``/mcp`` serves the proxy:
``fak_mcp_proxy_calls_total{server,tool,outcome}`` (outcome: allow, deny, unavailable, error,
refused), ``fak_mcp_proxy_call_seconds_total{server,tool}`` (time of admitted calls, wall
included), ``fak_mcp_proxy_downstream_connects_total{server}`` (1 + restarts) and
``fak_mcp_proxy_tools{server,state}`` (listed, poisoned, held). Reads the proxy's counters at
scrape time; adds nothing to the call path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

__all__ = ["ProxyCollector"]


class ProxyCollector:
    def __init__(self, proxy: Any) -> None:
        self._proxy = proxy

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        proxy = self._proxy
        calls = CounterMetricFamily(
            "fak_mcp_proxy_calls", "proxied tools/call by server, tool and outcome",
            labels=["server", "tool", "outcome"],
        )  # fmt: skip
        for (server, tool, outcome), n in sorted(proxy.counts.items()):
            calls.add_metric([server, tool, outcome], n)
        yield calls
        seconds = CounterMetricFamily(
            "fak_mcp_proxy_call_seconds", "time spent on admitted calls (wall included)",
            labels=["server", "tool"],
        )  # fmt: skip
        for (server, tool), total in sorted(proxy.latency_s.items()):
            seconds.add_metric([server, tool], total)
        yield seconds
        connects = CounterMetricFamily(
            "fak_mcp_proxy_downstream_connects", "downstream connections made (1 + restarts)",
            labels=["server"],
        )  # fmt: skip
        for name, downstream in sorted(proxy.downstreams.items()):
            connects.add_metric([name], downstream.connects)
        yield connects
        tools = GaugeMetricFamily(
            "fak_mcp_proxy_tools", "downstream tools by state", labels=["server", "state"]
        )
        states: Counter[tuple[str, str]] = Counter(
            (entry.server, str(entry.state)) for entry in proxy.catalog.entries()
        )
        for (server, state), n in sorted(states.items()):
            tools.add_metric([server, state], n)
        yield tools
