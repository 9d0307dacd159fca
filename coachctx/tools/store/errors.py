"""What the policy store raises: one root, `StoreError`, under `CoachctxError`."""

from __future__ import annotations

from coachctx.errors import CoachctxError


class StoreError(CoachctxError):
    """The policy store refused an operation or could not be used."""


class MissingStoreError(StoreError):
    """A SQLite store file that does not exist, opened only to read: it is not created."""


class UnknownVersionError(StoreError):
    """A version number or label that the store does not have."""


class StaleSaveError(StoreError):
    """A save based on a version that is no longer the head of the label it would move."""

    def __init__(self, message: str, *, label: str, head: int | None, base: int | None) -> None:
        super().__init__(message)
        self.label = label
        self.head = head
        self.base = base


class NoChangeError(StoreError):
    """A save whose policy is identical to the version it is based on."""


class ChangedVersionError(StoreError):
    """A saved version whose YAML no longer has the digest it was saved with: edited in the database."""
