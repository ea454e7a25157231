"""API keys: who a caller is (principal, roles, tenant), decided by a hashed credential, never by a body."""

from caseboard.keys.model import ApiKey, IssuedKey, KeyStore, hash_secret, new_token, split_token
from caseboard.keys.stores import MemoryKeyStore, SqlKeyStore, open_key_store

__all__ = [
    "ApiKey",
    "IssuedKey",
    "KeyStore",
    "MemoryKeyStore",
    "SqlKeyStore",
    "hash_secret",
    "new_token",
    "open_key_store",
    "split_token",
]
