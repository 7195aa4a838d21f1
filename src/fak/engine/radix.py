"""A radix prefix tree of KV caches keyed by token ids (RadixAttention-style) (tier T3).

Each node owns the cache rows of its edge only (a ``KVCache`` starting at the node's depth), so
every cached token is stored once; a session's cache is the concatenation along a root path.
``match`` finds the longest cached prefix and, when the divergence falls inside an edge,
splits it there (the upper part is a clone with its tail evicted, so it is exact). Memory is
bounded by ``evict_to_budget`` (LRU over unleased leaves, collapsing upwards); ``evict_subtree``
removes a named branch as policy, whatever its recency or leases. No model code runs here.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from fak.engine.kvcache import KVCache

__all__ = ["RadixNode", "RadixTree"]


@dataclass(eq=False, slots=True)
class RadixNode:
    edge: tuple[int, ...]
    kv: KVCache | None
    parent: RadixNode | None
    children: dict[int, RadixNode] = field(default_factory=dict)
    last_used: int = 0
    leases: int = 0

    @property
    def depth(self) -> int:
        """Tokens from the root to the end of this node's edge."""
        return 0 if self.kv is None else self.kv.end


class RadixTree:
    """Longest-prefix reuse of computed caches, bounded by a token budget."""

    def __init__(self, *, budget_tokens: int = 8192) -> None:
        self.root = RadixNode(edge=(), kv=None, parent=None)
        self.budget_tokens = budget_tokens
        self._clock = itertools.count(1)
        self.tokens = 0  # cached rows over all nodes (each token stored once)
        self.nodes = 0

    # ---- lookup -----------------------------------------------------------------------------
    def match(self, ids: Sequence[int]) -> tuple[RadixNode, int]:
        """The deepest node whose path is a prefix of ``ids``, and that prefix's length.

        If ``ids`` leaves an edge part-way, the edge is split so the returned node ends
        exactly at the matched length.
        """
        node, depth = self.root, 0
        now = next(self._clock)
        node.last_used = now
        while depth < len(ids):
            child = node.children.get(ids[depth])
            if child is None:
                break
            edge = child.edge
            k = 0
            limit = min(len(edge), len(ids) - depth)
            while k < limit and edge[k] == ids[depth + k]:
                k += 1
            if k < len(edge):
                child = self._split(child, k)
            child.last_used = now
            node, depth = child, depth + k
            if k < len(edge):
                break
        return node, depth

    def _split(self, child: RadixNode, k: int) -> RadixNode:
        """Cut ``child``'s edge after ``k`` tokens; returns the new upper node."""
        assert child.kv is not None and child.parent is not None and 0 < k < len(child.edge)
        upper_kv = child.kv.clone()
        upper_kv.truncate(k)  # clone + evict of the tail: no survivor moves, so exact
        lower_kv = child.kv.slice(k, child.kv.length)
        upper = RadixNode(edge=child.edge[:k], kv=upper_kv, parent=child.parent)
        upper.last_used = child.last_used
        upper.children[child.edge[k]] = child
        child.parent.children[child.edge[0]] = upper
        child.parent = upper
        child.edge = child.edge[k:]
        child.kv = lower_kv
        self.nodes += 1
        return upper

    def path(self, node: RadixNode) -> list[RadixNode]:
        out: list[RadixNode] = []
        cur: RadixNode | None = node
        while cur is not None and cur.kv is not None:
            out.append(cur)
            cur = cur.parent
        out.reverse()
        return out

    def materialize(self, node: RadixNode, *, extra: int = 0) -> KVCache | None:
        """A fresh cache holding the whole prefix ending at ``node`` (None for the root)."""
        parts = [n.kv for n in self.path(node) if n.kv is not None]
        return KVCache.concat(parts, extra=extra) if parts else None

    # ---- insert -----------------------------------------------------------------------------
    def insert(self, cache: KVCache) -> RadixNode:
        """Store a whole-context cache (start 0); returns the node ending at its last row."""
        if cache.start != 0:
            raise ValueError("insert takes a cache that starts at position 0")
        ids = cache.token_ids()
        node, depth = self.match(ids)
        if depth == len(ids):
            return node
        leaf = RadixNode(edge=tuple(ids[depth:]), kv=cache.slice(depth, len(ids)), parent=node)
        leaf.last_used = next(self._clock)
        node.children[ids[depth]] = leaf
        self.tokens += len(ids) - depth
        self.nodes += 1
        return leaf

    # ---- leases and eviction ----------------------------------------------------------------
    def lease(self, node: RadixNode) -> None:
        node.leases += 1

    def release(self, node: RadixNode) -> None:
        node.leases = max(0, node.leases - 1)

    def _remove(self, node: RadixNode) -> int:
        """Detach ``node`` and its subtree; returns the cached rows dropped."""
        removed = 0
        stack = [node]
        while stack:
            cur = stack.pop()
            removed += len(cur.edge)
            self.nodes -= 1
            stack.extend(cur.children.values())
            cur.children = {}
            cur.kv = None
        if node.parent is not None:
            node.parent.children.pop(node.edge[0], None)
            node.parent = None
        self.tokens -= removed
        return removed

    def evict_to_budget(self, budget: int | None = None) -> int:
        """Drop least-recently-used unleased leaves until the tree holds at most ``budget``."""
        limit = self.budget_tokens if budget is None else budget
        removed = 0
        while self.tokens > limit:
            leaves = [n for n in self._walk() if not n.children and n.leases == 0]
            if not leaves:
                break
            victim = min(leaves, key=lambda n: n.last_used)
            removed += self._remove(victim)
        return removed

    def evict_subtree(self, node: RadixNode) -> int:
        """Policy eviction: drop ``node`` and everything below it, leases notwithstanding."""
        if node is self.root:
            raise ValueError("the root cannot be evicted")
        return self._remove(node)

    def evict_after(self, prefix: Sequence[int], first: int) -> int:
        """Drop every cached branch that continues ``prefix`` with token ``first``."""
        node, depth = self.match(prefix)
        if depth != len(prefix):
            return 0
        child = node.children.get(first)
        return 0 if child is None else self._remove(child)

    def _walk(self) -> list[RadixNode]:
        out: list[RadixNode] = []
        stack = list(self.root.children.values())
        while stack:
            cur = stack.pop()
            out.append(cur)
            stack.extend(cur.children.values())
        return out

    def stats(self) -> dict[str, int]:
        nodes = self._walk()
        return {
            "nodes": len(nodes),
            "tokens": self.tokens,
            "leased": sum(1 for n in nodes if n.leases),
            "budget_tokens": self.budget_tokens,
        }
