"""The content-addressed store: identity, inlining, bounded pin-aware LRU, durable files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fak.abi import INLINE_MAX, BlobStore, Ref, RefKind
from fak.cas import CorruptBlobError, DirectoryStore, MemoryStore, make_ref, parse_digest


def _blob(tag: int, size: int = 1000) -> bytes:
    return (f"blob-{tag:06d}-".encode() * size)[:size]


# --- shared behaviour ---------------------------------------------------------------------------


@pytest.fixture(params=["memory", "directory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "memory":
        return MemoryStore()
    return DirectoryStore(tmp_path / "blobs")


def test_stores_implement_the_blobstore_protocol(store: BlobStore) -> None:
    assert isinstance(store, BlobStore)


def test_small_payloads_stay_inline_and_are_not_stored(store: BlobStore) -> None:
    data = b"x" * INLINE_MAX
    ref = store.put(data)
    assert ref.kind == RefKind.INLINE
    assert ref.inline == data
    assert ref.digest == hashlib.sha256(data).hexdigest()
    assert ref.digest not in store
    assert store.get(ref) == data


def test_large_payloads_are_stored_by_sha256(store: BlobStore) -> None:
    data = b"y" * (INLINE_MAX + 1)
    ref = store.put(data)
    assert ref == Ref(hashlib.sha256(data).hexdigest(), len(data), RefKind.BLOB)
    assert ref.digest in store
    assert store.get(ref) == data
    assert store.get(ref.digest) == data
    assert store.get("sha256:" + ref.digest) == data


def test_unknown_or_malformed_digests_raise_keyerror(store: BlobStore) -> None:
    with pytest.raises(KeyError):
        store.get("0" * 64)
    for bad in ("../../etc/passwd", "ABC", "g" * 64, "0" * 63):
        with pytest.raises(KeyError):
            store.get(bad)
        assert bad not in store
    with pytest.raises(KeyError):
        store.pin("1" * 64)


def test_pins_are_counted(store: BlobStore) -> None:
    ref = store.put(_blob(1))
    store.pin(ref.digest)
    store.pin(ref.digest)
    store.unpin(ref.digest)
    store.unpin(ref.digest)
    with pytest.raises(KeyError):
        store.unpin(ref.digest)


def test_a_tampered_inline_ref_is_refused(store: BlobStore) -> None:
    ref = make_ref(b"hello")
    forged = Ref(ref.digest, 5, RefKind.INLINE, inline=b"jello")
    with pytest.raises(CorruptBlobError):
        store.get(forged)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2048))
def test_law_get_of_put_is_identity(data: bytes) -> None:
    store = MemoryStore()
    assert store.get(store.put(data)) == data


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=1024), st.binary(max_size=1024))
def test_law_equal_bytes_give_equal_refs(a: bytes, b: bytes) -> None:
    store = MemoryStore()
    assert (store.put(a) == store.put(b)) == (a == b)
    assert store.put(a) == store.put(bytes(a))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2048))
def test_law_put_hashed_equals_put(data: bytes) -> None:
    hashed, plain = MemoryStore(), MemoryStore()
    digest = hashlib.sha256(data).hexdigest()
    ref = hashed.put_hashed(data, digest)
    assert ref == plain.put(data)
    assert hashed.get(ref) == data
    assert (digest in hashed) == (ref.kind == RefKind.BLOB)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.binary(min_size=INLINE_MAX + 1, max_size=1500), max_size=8))
def test_law_directory_get_of_put_is_identity(
    tmp_path_factory: pytest.TempPathFactory, blobs: list[bytes]
) -> None:
    store = DirectoryStore(tmp_path_factory.mktemp("cas"))
    refs = [store.put(b) for b in blobs]
    assert [store.get(r) for r in refs] == blobs


# --- the bounded memory store -------------------------------------------------------------------


def test_memory_store_evicts_least_recently_used_unpinned_first() -> None:
    store = MemoryStore(max_bytes=3000)
    a, b, c = (store.put(_blob(i)) for i in range(3))
    store.get(a)  # a is now more recent than b
    d = store.put(_blob(3))
    assert b.digest not in store
    assert all(x.digest in store for x in (a, c, d))
    assert store.stats.evicted == 1
    assert store.stats.resident_bytes == 3000


def test_memory_store_never_evicts_pinned_blobs() -> None:
    store = MemoryStore(max_bytes=2000)
    keep = store.put(_blob(0))
    store.pin(keep.digest)
    for i in range(1, 20):
        store.put(_blob(i))
    assert keep.digest in store
    assert store.get(keep) == _blob(0)


def test_with_everything_pinned_the_store_goes_over_its_bound_rather_than_drop_a_pin() -> None:
    store = MemoryStore(max_bytes=1500)
    a = store.put_pinned(_blob(0))
    b = store.put(_blob(1))  # over the bound: the newest unpinned blob is the only candidate
    assert b.digest not in store
    b = store.put_pinned(_blob(1))
    assert store.stats.resident_bytes == 2000  # both pinned: over the bound, nothing dropped
    assert store.pins(a.digest) == store.pins(b.digest) == 1
    c = store.put(_blob(2))
    assert c.digest not in store
    assert a.digest in store and b.digest in store


def test_put_pinned_on_the_directory_store_pins(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    ref = store.put_pinned(_blob(8))
    assert store.pins(ref.digest) == 1
    assert store.put_pinned(b"tiny").kind == RefKind.INLINE


def test_unpinning_makes_a_blob_evictable_again() -> None:
    store = MemoryStore(max_bytes=2000)
    a = store.put(_blob(0))
    store.pin(a.digest)
    store.put(_blob(1))
    store.put(_blob(2))  # over the bound: the unpinned blob 1 goes, pinned a stays
    assert a.digest in store
    store.unpin(a.digest)  # a becomes most recent; the store is at its bound, nothing goes yet
    store.put(_blob(3))
    store.put(_blob(4))
    assert a.digest not in store


def test_zero_max_bytes_is_unbounded() -> None:
    store = MemoryStore(max_bytes=0)
    refs = [store.put(_blob(i, 5000)) for i in range(50)]
    assert all(r.digest in store for r in refs)


def test_dedup_is_counted_and_stores_once() -> None:
    store = MemoryStore()
    store.put(_blob(7))
    store.put(_blob(7))
    stats = store.stats
    assert (stats.puts, stats.dedup_hits, stats.resident_blobs) == (2, 1, 1)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_bad_max_bytes_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryStore(max_bytes=bad)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=60),
    st.sets(st.integers(0, 30), max_size=5),
    st.integers(1000, 8000),
)
def test_law_pinned_blobs_survive_any_pressure(
    order: list[int], pinned: set[int], bound: int
) -> None:
    store = MemoryStore(max_bytes=bound)
    for tag in sorted(pinned):
        store.put_pinned(_blob(tag))
    for tag in order:
        ref = store.put(_blob(tag))
        if ref.digest in store:  # a put may evict its own blob when pins fill the bound
            assert store.get(ref) == _blob(tag)
    for tag in pinned:
        assert store.get(make_ref(_blob(tag)).digest) == _blob(tag)
    stats = store.stats
    assert stats.resident_bytes <= bound or stats.resident_blobs == len(pinned)


# --- the durable directory store ----------------------------------------------------------------


def test_directory_store_survives_a_reopen(tmp_path: Path) -> None:
    ref = DirectoryStore(tmp_path).put(_blob(5))
    again = DirectoryStore(tmp_path)
    assert again.get(ref) == _blob(5)
    assert again.stats.resident_blobs == 1


def test_directory_store_writes_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    ref = store.put(_blob(1))
    path = tmp_path / ref.digest[:2] / ref.digest
    assert path.read_bytes() == _blob(1)
    assert [p.name for p in path.parent.iterdir()] == [ref.digest]


def test_directory_store_refuses_corrupt_bytes(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    ref = store.put(_blob(2))
    path = tmp_path / ref.digest[:2] / ref.digest
    data = bytearray(path.read_bytes())
    data[10] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptBlobError, match="corrupt"):
        store.get(ref)


def test_directory_store_rewrites_a_corrupt_blob_on_put(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    ref = store.put(_blob(3))
    path = tmp_path / ref.digest[:2] / ref.digest
    path.write_bytes(b"garbage")
    assert store.put(_blob(3)) == ref
    assert store.get(ref) == _blob(3)


def test_directory_store_failed_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DirectoryStore(tmp_path)

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        store.put(_blob(4))
    monkeypatch.undo()
    assert list(tmp_path.rglob("*.tmp*")) == [] and list(tmp_path.rglob(".tmp-*")) == []
    assert make_ref(_blob(4)).digest not in store


def test_parse_digest_accepts_the_prefixed_form_only_with_hex() -> None:
    digest = "a" * 64
    assert parse_digest("sha256:" + digest) == digest
    with pytest.raises(KeyError):
        parse_digest("sha256:" + "A" * 64)
