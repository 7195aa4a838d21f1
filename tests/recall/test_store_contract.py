"""Both image stores honour the same seam: dedup by content, verified reads, strict verify."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fak.recall import DirectoryImage, ImageStore, MemoryImage, RecallError, RecallErrorCode


@pytest.fixture(params=["memory", "directory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ImageStore:
    return MemoryImage() if request.param == "memory" else DirectoryImage(tmp_path / "img")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_put_is_idempotent_and_get_returns_the_bytes(store: ImageStore) -> None:
    data = b"fares " * 100
    assert isinstance(store, ImageStore)
    assert store.put_blob(_digest(data), data) is True
    assert store.put_blob(_digest(data), data) is False
    assert store.get_blob(_digest(data)) == data
    store.verify_blobs({_digest(data): len(data)})


def test_missing_manifest_blob_and_length(store: ImageStore) -> None:
    with pytest.raises(RecallError) as err:
        store.read_manifest()
    assert err.value.code is RecallErrorCode.IMAGE_MISSING
    with pytest.raises(RecallError) as err:
        store.get_blob("0" * 64)
    assert err.value.code is RecallErrorCode.BLOB_MISSING
    store.put_blob(_digest(b"abc"), b"abc")
    with pytest.raises(RecallError) as err:
        store.verify_blobs({_digest(b"abc"): 4})
    assert err.value.code is RecallErrorCode.BLOB_CORRUPT
    with pytest.raises(RecallError) as err:
        store.verify_blobs({"1" * 64: 3})
    assert err.value.code is RecallErrorCode.BLOB_MISSING


def test_the_manifest_is_replaced_whole(store: ImageStore) -> None:
    store.commit_manifest(b"first\n")
    store.commit_manifest(b"second\n")
    assert store.read_manifest() == b"second\n"


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=4096))
def test_get_of_put_is_identity_in_memory(data: bytes) -> None:
    store = MemoryImage()
    store.put_blob(_digest(data), data)
    assert store.get_blob(_digest(data)) == data
