"""What an API key is, how its token looks, and the store seam.

A token is ``cbk_<key_id>_<secret>``: ``key_id`` (12 hex characters) names the row, ``secret`` is 32 random
bytes, URL-safe base64. Only the SHA-256 of the whole token is stored; a presented token is looked up by its
key id and its hash compared in constant time (``hmac.compare_digest``). The token is shown once, when the
key is created, and cannot be recovered from the store.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from caseboard.domain.items import Id, Role

PREFIX = "cbk"


class ApiKey(BaseModel):
    """A key's public record: never its secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key_id: str
    principal: Id
    roles: tuple[Role, ...]
    tenant_id: Id
    label: str | None = None
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class IssuedKey(BaseModel):
    """A key just created, with the token its holder presents (shown once)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: ApiKey
    token: str


def new_token() -> tuple[str, str]:
    """A fresh ``(key_id, token)``."""
    key_id = secrets.token_hex(6)
    return key_id, f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"


def split_token(token: str) -> str | None:
    """The key id a token names, or None when it is not shaped like a caseboard token."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX or len(parts[1]) != 12 or not parts[2]:
        return None
    return parts[1]


def hash_secret(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def matches(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(token), stored_hash)


class KeyStore(Protocol):
    def create(
        self, principal: str, roles: tuple[Role, ...], tenant_id: str, label: str | None = None
    ) -> IssuedKey: ...

    def authenticate(self, token: str) -> ApiKey | None:
        """The active key the token belongs to, or None (unknown, malformed, wrong secret or revoked)."""
        ...

    def list(self) -> list[ApiKey]: ...

    def revoke(self, key_id: str) -> ApiKey | None: ...

    def close(self) -> None: ...
