"""Stable error codes of recall and the one exception that carries them (tier T2).

Every way an image, a blob or a request can be unacceptable maps to one ``RecallErrorCode``; the
CLI prints ``[CODE] message`` and exits 1, the gateway answers 4xx with the code. The message
says what to fix and never quotes payload bytes.
"""

from __future__ import annotations

import enum

__all__ = ["RecallError", "RecallErrorCode"]


class RecallErrorCode(enum.StrEnum):
    """Closed vocabulary of recall failures (wire strings)."""

    IMAGE_MISSING = "FAK-RECALL-IMAGE-MISSING"
    IMAGE_MALFORMED = "FAK-RECALL-IMAGE-MALFORMED"
    IMAGE_SCHEMA = "FAK-RECALL-IMAGE-SCHEMA"
    IMAGE_CHECKSUM = "FAK-RECALL-IMAGE-CHECKSUM"
    BLOB_CORRUPT = "FAK-RECALL-BLOB-CORRUPT"
    BLOB_MISSING = "FAK-RECALL-BLOB-MISSING"
    FOREIGN_FILE = "FAK-RECALL-FOREIGN-FILE"
    STEP_UNKNOWN = "FAK-RECALL-STEP-UNKNOWN"
    DIGEST_GUARD = "FAK-RECALL-DIGEST-GUARD"
    BAD_REQUEST = "FAK-RECALL-BAD-REQUEST"
    WRITE_FAILED = "FAK-RECALL-WRITE-FAILED"


class RecallError(ValueError):
    """An image or a request recall refuses as a whole; ``code`` is stable, ``str`` says why."""

    def __init__(self, code: RecallErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"
