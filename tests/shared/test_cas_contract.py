"""The CAS contract, run against every backend: memory, directory and Redis.

The same laws for each: identity by sha256, small payloads inline, unknown digests KeyError,
ref-counted pins; and for the bounded backends (memory, Redis) pin-aware LRU eviction.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fak.abi import INLINE_MAX, BlobStore, Ref, RefKind
from fak.cas import CorruptBlobError, DirectoryStore, MemoryStore
from fak.cas.redis import CasUnavailable, RedisStore, connect


def _blob(tag: int, size: int = 1000) -> bytes:
    return (f"blob-{tag:06d}-".encode() * size)[:size]


@pytest.fixture(params=["memory", "directory", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "directory":
        yield DirectoryStore(tmp_path / "blobs")
    else:
        url = request.getfixturevalue("redis_url")
        redis_store = RedisStore(url)
        yield redis_store
        redis_store.client.close()


def _bounded(kind: str, max_bytes: int, request: pytest.FixtureRequest) -> MemoryStore | RedisStore:
    if kind == "memory":
        return MemoryStore(max_bytes=max_bytes)
    return RedisStore(request.getfixturevalue("redis_url"), max_bytes=max_bytes)


bounded_kinds = pytest.mark.parametrize("kind", ["memory", "redis"])


def test_every_backend_implements_the_blobstore_protocol(store: BlobStore) -> None:
    assert isinstance(store, BlobStore)


def test_small_payloads_stay_inline(store: BlobStore) -> None:
    data = b"x" * INLINE_MAX
    ref = store.put(data)
    assert ref.kind == RefKind.INLINE and ref.inline == data
    assert ref.digest not in store
    assert store.get(ref) == data


def test_large_payloads_are_stored_by_sha256(store: BlobStore) -> None:
    data = b"y" * (INLINE_MAX + 1)
    ref = store.put(data)
    assert ref == Ref(hashlib.sha256(data).hexdigest(), len(data), RefKind.BLOB)
    assert ref.digest in store
    assert store.get(ref) == data
    assert store.get("sha256:" + ref.digest) == data
    assert store.put(data) == ref  # idempotent


def test_unknown_or_malformed_digests_raise_keyerror(store: BlobStore) -> None:
    with pytest.raises(KeyError):
        store.get("0" * 64)
    for bad in ("../../etc/passwd", "ABC", "g" * 64, "0" * 63):
        with pytest.raises(KeyError):
            store.get(bad)
        assert bad not in store


def test_pins_are_counted(store: BlobStore) -> None:
    ref = store.put(_blob(1))
    store.pin(ref.digest)
    store.pin(ref.digest)
    store.unpin(ref.digest)
    store.unpin(ref.digest)
    with pytest.raises(KeyError):
        store.unpin(ref.digest)
    with pytest.raises(KeyError):
        store.pin("1" * 64)  # not resident


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(min_size=0, max_size=3000))
def test_law_get_of_put_is_identity(store: BlobStore, data: bytes) -> None:
    assert store.get(store.put(data)) == data


@bounded_kinds
def test_least_recently_used_unpinned_blobs_go_first(
    kind: str, request: pytest.FixtureRequest
) -> None:
    s = _bounded(kind, 3000, request)
    a, b, c = (s.put(_blob(i)) for i in range(3))
    s.get(a)  # a is now the most recent
    d = s.put(_blob(3))
    assert a.digest in s and c.digest in s and d.digest in s
    assert b.digest not in s
    assert s.stats.evicted == 1
    assert s.stats.resident_bytes == 3000


@bounded_kinds
def test_pinned_blobs_are_never_evicted(kind: str, request: pytest.FixtureRequest) -> None:
    s = _bounded(kind, 1500, request)
    held = s.put_pinned(_blob(0))
    for i in range(1, 6):
        s.put(_blob(i))
    assert held.digest in s and s.get(held) == _blob(0)
    assert s.pins(held.digest) == 1
    s.unpin(held.digest)  # evictable again: the next pressure may take it
    for i in range(6, 9):
        s.put(_blob(i))
    assert held.digest not in s


@bounded_kinds
def test_with_everything_pinned_the_bound_is_exceeded_rather_than_a_pin_dropped(
    kind: str, request: pytest.FixtureRequest
) -> None:
    s = _bounded(kind, 1500, request)
    refs = [s.put_pinned(_blob(i)) for i in range(3)]
    assert all(r.digest in s for r in refs)
    assert s.stats.resident_bytes == 3000 and s.stats.pinned_blobs == 3


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=st.lists(st.tuples(st.sampled_from("ppu"), st.integers(0, 7)), max_size=40))
def test_law_redis_and_memory_agree_on_residency(
    redis_url: str, ops: list[tuple[str, int]]
) -> None:
    """Any sequence of put / put_pinned / unpin leaves the same blobs resident in both."""
    redis.Redis.from_url(redis_url).flushall()
    mem, red = MemoryStore(max_bytes=3500), RedisStore(redis_url, max_bytes=3500)
    for op, tag in ops:
        data = _blob(tag)
        for s in (mem, red):
            if op == "p":
                s.put(data)
            elif op == "u":
                digest = hashlib.sha256(data).hexdigest()
                if mem.pins(digest) > 0:
                    s.unpin(digest)
            else:
                s.put_pinned(data)
    for tag in range(8):
        digest = hashlib.sha256(_blob(tag)).hexdigest()
        assert (digest in mem) == (digest in red), tag
        assert mem.pins(digest) == red.pins(digest)
    assert mem.stats.resident_bytes == red.stats.resident_bytes
    red.client.close()


def test_two_workers_share_blobs_and_pins(redis_url: str) -> None:
    one, two = RedisStore(redis_url, max_bytes=2500), RedisStore(redis_url, max_bytes=2500)
    ref = one.put_pinned(_blob(1))
    assert two.get(ref) == _blob(1)
    two.pin(ref.digest)
    one.unpin(ref.digest)
    for i in range(2, 8):
        one.put(_blob(i))
    assert ref.digest in one  # worker two still pins it
    two.unpin(ref.digest)
    for i in range(8, 12):
        two.put(_blob(i))
    assert ref.digest not in one


def test_concurrent_puts_from_many_threads_keep_the_accounting_exact(redis_url: str) -> None:
    s = RedisStore(redis_url, max_bytes=20_000)

    def work(base: int) -> None:
        for i in range(40):
            s.put(_blob(base * 100 + i % 30))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client = redis.Redis.from_url(redis_url)
    actual = sum(client.strlen(k) for k in client.scan_iter("fak:cas:b:*"))
    client.close()
    assert s.stats.resident_bytes == actual <= 20_000


def test_corrupt_bytes_in_redis_are_refused_and_a_put_rewrites_them(redis_url: str) -> None:
    s = RedisStore(redis_url)
    ref = s.put(_blob(1))
    s.client.set("fak:cas:b:" + ref.digest, _blob(2))
    with pytest.raises(CorruptBlobError):
        s.get(ref)
    s.put(_blob(1))
    assert s.get(ref) == _blob(1)


def test_a_dead_redis_raises_unavailable_not_keyerror() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = RedisStore(connect(f"redis://127.0.0.1:{port}/0", timeout_s=0.3))
    with pytest.raises(CasUnavailable):
        s.put(_blob(1))
    with pytest.raises(CasUnavailable):
        s.get("0" * 64)
    assert not isinstance(CasUnavailable("x"), KeyError)
    assert s.ping() is False


def test_a_url_that_is_not_redis_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Redis URL"):
        connect("postgresql://u:secret@h/db")
    with pytest.raises(ValueError) as info:
        connect("http://u:secret@h/")
    assert "secret" not in str(info.value)
