"""A radix prefix tree of KV caches keyed by token ids (RadixAttention-style) (tier T3).

Nodes split the token space as a radix tree (each token counted once, on one edge); the rows
themselves live in the caches turns produced, held by reference: every node points at a cache
(``store``) whose first ``depth`` rows are its path. ``materialize`` forks that store, so a new
session reads every whole ``ATT_BLOCK`` of the prefix in place (from whichever cache in a fork
chain holds it) and copies only the block holding the divergence: nothing is copied into the
tree when a turn is stored, and sessions and turns over one prefix share its blocks. ``match``
splits an edge where a lookup leaves it (the upper part keeps the same store: a prefix of its
rows). Memory is bounded by ``evict_to_budget`` (LRU over unleased leaves, collapsing upwards);
``evict_subtree`` removes a named branch as policy, whatever its recency or leases. No model
code runs here.
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
    store: KVCache | None  # a cache (start 0) whose rows [0, depth) are this node's path
    depth: int  # tokens from the root to the end of this node's edge
    parent: RadixNode | None
    children: dict[int, RadixNode] = field(default_factory=dict)
    last_used: int = 0
    leases: int = 0


class RadixTree:
    """Longest-prefix reuse of computed caches, bounded by a token budget."""

    def __init__(self, *, budget_tokens: int = 8192) -> None:
        self.root = RadixNode(edge=(), store=None, depth=0, parent=None)
        self.budget_tokens = budget_tokens
        self._clock = itertools.count(1)
        self.tokens = 0  # cached rows over all nodes (each token stored once)
        self.nodes = 0
        self.splits = 0  # edges cut because a lookup left them part-way
        self.removed = 0  # cached rows dropped over the tree's life (budget or policy)

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

    def cached_depth(self, ids: Sequence[int]) -> int:
        """How many leading tokens of ``ids`` the tree holds; changes nothing (no split, no
        recency): the residency check a worker runs before it tells a router what it holds."""
        node, depth = self.root, 0
        while depth < len(ids):
            child = node.children.get(ids[depth])
            if child is None:
                break
            edge = child.edge
            limit = min(len(edge), len(ids) - depth)
            k = 0
            while k < limit and edge[k] == ids[depth + k]:
                k += 1
            depth += k
            if k < len(edge):
                break
            node = child
        return depth

    def _split(self, child: RadixNode, k: int) -> RadixNode:
        """Cut ``child``'s edge after ``k`` tokens; returns the new upper node (same store)."""
        assert child.parent is not None and 0 < k < len(child.edge)
        upper = RadixNode(
            edge=child.edge[:k],
            store=child.store,
            depth=child.depth - len(child.edge) + k,
            parent=child.parent,
        )
        upper.last_used = child.last_used
        upper.children[child.edge[k]] = child
        child.parent.children[child.edge[0]] = upper
        child.parent = upper
        child.edge = child.edge[k:]
        self.nodes += 1
        self.splits += 1
        return upper

    def path(self, node: RadixNode) -> list[RadixNode]:
        out: list[RadixNode] = []
        cur: RadixNode | None = node
        while cur is not None and cur is not self.root:
            out.append(cur)
            cur = cur.parent
        out.reverse()
        return out

    def materialize(self, node: RadixNode, *, extra: int = 0) -> KVCache | None:
        """A new session over the whole prefix ending at ``node`` (None for the root).

        It is a fork of the node's store: whole key blocks are read in place, the rest copied.
        """
        if node.store is None or node.depth == 0:
            return None
        return node.store.fork(node.depth, extra=extra)

    # ---- insert -----------------------------------------------------------------------------
    def insert(self, cache: KVCache) -> RadixNode:
        """Keep a whole-context cache (start 0, held by reference); returns its last row's node.

        Nodes along its path move to it (it holds their rows too, shared or its own), so the
        tree stops holding older turns' caches directly; a fork keeps its parents alive.
        """
        if cache.start != 0:
            raise ValueError("insert takes a cache that starts at position 0")
        ids = cache.token_ids()
        node, depth = self.match(ids)
        cur: RadixNode | None = node
        while cur is not None and cur is not self.root:
            cur.store = cache  # its rows [0, depth) are this path's too: hold the newest only
            cur = cur.parent
        if depth == len(ids):
            return node
        leaf = RadixNode(edge=tuple(ids[depth:]), store=cache, depth=len(ids), parent=node)
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
            cur.store = None
        if node.parent is not None:
            node.parent.children.pop(node.edge[0], None)
            node.parent = None
        self.tokens -= removed
        self.removed += removed
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
        held: dict[int, KVCache] = {}
        for cache in (n.store for n in nodes):
            while cache is not None and id(cache) not in held:  # a fork keeps its parents
                held[id(cache)] = cache
                cache = cache.base
        return {
            "nodes": len(nodes),
            "tokens": self.tokens,
            "leased": sum(1 for n in nodes if n.leases),
            "budget_tokens": self.budget_tokens,
            "stores": len(held),
            "stored_rows": sum(c.own_rows for c in held.values()),
        }
