"""An in-memory tar archive of given files, for the corpus readers' tests."""

from __future__ import annotations

import io
import tarfile
from typing import Literal


def tar_of(files: dict[str, bytes], mode: Literal["w", "w:gz"] = "w:gz") -> tarfile.TarFile:
    """A tar archive holding ``files`` (name -> bytes), opened for reading."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return tarfile.open(fileobj=buf)
