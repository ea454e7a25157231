"""``CASEBOARD_DATABASE_URL``, parsed once: ``sqlite:///path`` or ``postgresql://user:pw@host:port/db?schema=name``.

Every store beside the ledger (keys, artifacts, knowledge, the dispatcher's tables and wake-ups) lives in
the ledger's database and schema, so each takes its facts from the one ``DatabaseUrl`` rather than reading
the text again. What a PostgreSQL URL leaves out is filled in the same way for all of them: host 127.0.0.1,
port 5432, user ``postgres``, database ``postgres``, schema ``public``. ``postgres://`` is read as
``postgresql://``. ``memory://`` (the tests' in-memory ledger) is not a database URL: the stores that
accept it check for it before they parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, quote, unquote, urlsplit

from caseboard.domain.errors import ConfigurationError

SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""The schema of the ledger's tables: lower-case letters, digits and underscores, at most 63, no digit first."""
EXPECTED = "use sqlite:///path/to/ledger.db or postgresql://user@host:5432/dbname?schema=name"
POSTGRES_SCHEMES = ("postgresql", "postgres")
CREDENTIALS = re.compile(r"^(?P<user>[A-Za-z][A-Za-z0-9+.-]*:/*[^:/?#@]*):[^?]*@")
"""``scheme://user:password@``, up to the last ``@`` before the query (a password may hold ``/`` or ``@``)."""


@dataclass(frozen=True)
class DatabaseUrl:
    """One ledger database. ``host``, ``port``, ``user`` and ``dbname`` are PostgreSQL's, with what the URL
    leaves out filled in; a SQLite URL has only ``sqlite_path`` (and the schema ``public``)."""

    kind: Literal["sqlite", "postgresql"]
    sqlite_path: Path | None = None
    """The ledger's file (``kind == "sqlite"``); None for PostgreSQL."""
    schema: str = "public"
    host: str = ""
    port: int = 0
    user: str = ""
    password: str | None = field(default=None, repr=False)
    dbname: str = ""

    @classmethod
    def parse(cls, url: DatabaseUrl | str) -> DatabaseUrl:
        """``url`` read once, or a ``ConfigurationError`` of one line saying what is wrong and what to write
        (the URL in it without its password). A ``DatabaseUrl`` is returned as it is."""
        if isinstance(url, DatabaseUrl):
            return url
        scheme, sep, rest = url.partition("://")
        if scheme == "sqlite" and sep:
            return _sqlite(url, rest)
        if scheme in POSTGRES_SCHEMES and sep:
            return _postgres(url)
        raise ConfigurationError(f"CASEBOARD_DATABASE_URL {redact(url)!r} is not supported: {EXPECTED}")

    @property
    def conninfo(self) -> dict[str, Any]:
        """The keywords of a libpq connection (psycopg's ``connect(**conninfo)``, eventsourcing's datastore):
        ``dbname``, ``host``, ``port``, ``user`` and ``password`` (empty when the URL gives none); the schema
        is not among them. TLS and libpq's other settings come from its environment (``PGSSLMODE``, ...),
        which every connection reads: eventsourcing's datastore takes no other keyword."""
        if self.kind != "postgresql":
            raise ConfigurationError(f"{self.redacted!r} is a SQLite ledger, not a PostgreSQL connection")
        return {
            "dbname": self.dbname,
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password or "",
        }

    @property
    def redacted(self) -> str:
        """The URL for a message: every fact of it but the password (shown as ``***``)."""
        if self.sqlite_path is not None:
            return f"sqlite:///{self.sqlite_path}"
        secret = ":***" if self.password else ""
        host = f"[{self.host}]" if ":" in self.host else quote(self.host, safe="")
        query = "" if self.schema == "public" else f"?schema={self.schema}"
        return f"postgresql://{quote(self.user, safe='')}{secret}@{host}:{self.port}/{quote(self.dbname)}{query}"


def redact(url: str) -> str:
    """``url`` with the password of its user replaced by ``***``, whether or not the URL is valid."""
    return url if url.startswith("sqlite:") else CREDENTIALS.sub(r"\g<user>:***@", url, count=1)


def _sqlite(url: str, rest: str) -> DatabaseUrl:
    path = rest[1:] if rest.startswith("/") else ""
    if not path:
        raise ConfigurationError(
            f"CASEBOARD_DATABASE_URL {url!r} names no file: a SQLite ledger URL looks like sqlite:///path/to/ledger.db"
        )
    return DatabaseUrl(kind="sqlite", sqlite_path=Path(path))


def _postgres(url: str) -> DatabaseUrl:
    shown = redact(url)
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [ of an IPv6 host; urllib's words could quote a piece of the password
        raise ConfigurationError(f"CASEBOARD_DATABASE_URL {shown!r} is not a valid URL; {EXPECTED}") from None
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ConfigurationError(
            f"CASEBOARD_DATABASE_URL {shown!r} is not a valid URL: the port is a number from 1 to 65535"
        )
    query = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(query) - {"schema"})
    if unknown:  # refused, never dropped: a dropped sslmode would quietly connect without TLS
        raise ConfigurationError(
            f"CASEBOARD_DATABASE_URL {shown!r}: caseboard reads only ?schema=name, not {', '.join(unknown)}; "
            "give libpq's settings in its environment (PGSSLMODE, PGSSLROOTCERT, ...), which every connection reads"
        )
    schemas = query.get("schema", ["public"])
    if len(schemas) > 1 or not SCHEMA_NAME.fullmatch(schemas[0]):
        raise ConfigurationError(
            f"CASEBOARD_DATABASE_URL {shown!r}: the schema {'&'.join(schemas)!r} is not a name of lower-case "
            "letters, digits and underscores (at most 63, not starting with a digit)"
        )
    hostinfo = parts.netloc.rpartition("@")[2]
    host = hostinfo[1:].partition("]")[0] if hostinfo.startswith("[") else hostinfo.partition(":")[0]
    return DatabaseUrl(
        kind="postgresql",
        schema=schemas[0],
        host=unquote(host) or "127.0.0.1",
        port=port or 5432,
        user=unquote(parts.username or "") or "postgres",
        password=None if parts.password is None else unquote(parts.password),
        dbname=unquote(parts.path.lstrip("/")) or "postgres",
    )
