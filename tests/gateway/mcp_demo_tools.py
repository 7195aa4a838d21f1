"""Tools the MCP tests register on the kernel with ``fak mcp --tools PATH.py:register``."""

from __future__ import annotations

from typing import Any

PLANTED = "sk-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"  # secret-shaped: the result screen must hold it


def search_kb(args: dict[str, Any]) -> dict[str, Any]:
    return {"hits": [f"article about {args.get('query', '')}"]}


def lookup_customer(args: dict[str, Any]) -> str:
    return f"customer {args.get('id', '?')}: plan=pro, api key on file {PLANTED}"


def get_order_status(args: dict[str, Any]) -> str:
    raise RuntimeError(f"order backend down (order {args.get('id')}, key {PLANTED})")


def register(kernel: Any) -> None:
    kernel.register_tool("search_kb", search_kb, read_only=True)
    kernel.register_tool("lookup_customer", lookup_customer, read_only=True)
    kernel.register_tool("get_order_status", get_order_status, read_only=True)
