"""The production artifact store: PostgreSQL tables of their own, in the ledger's schema (docs/adr/0080).

``caseboard_artifacts`` holds one row of metadata per (tenant, artifact); ``caseboard_artifact_blocks`` the
bytes, one row per block of ``BLOCK`` bytes, keyed by an upload id (``blob``). An upload inserts its blocks
as they stream in and the metadata row last, all in one transaction: a killed upload rolls back and leaves
nothing, and no more than one block is in this process's memory. Of two uploads of the same bytes, the
metadata insert of the second waits for the first and then finds the row (``ON CONFLICT DO NOTHING``), so it
rolls its blocks back and returns the first's artifact. Reads fetch one block per query.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlparse, urlunparse

import psycopg
from psycopg import pq
from psycopg.sql import SQL, Identifier

from caseboard.domain.citations import ARTIFACT_ID_RE, CitationFacts, Cited, Span
from caseboard.domain.errors import ConfigurationError, LedgerUnavailable
from caseboard.evidence.model import (
    BLOCK,
    DEFAULT_MAX_BYTES,
    DEFAULT_MEDIA_TYPE,
    ArtifactMeta,
    ArtifactNotFound,
    RangeOutside,
    Stored,
)
from caseboard.evidence.scan import Intake, cut, facts, start_block

COLUMNS = (
    "artifact_id, tenant_id, media_type, size, lines, source_system, stored_by, stored_at, block_lines, removed_at"
)
IDLE_MAX = 8
"""Idle connections kept for reuse (last in, first out); a busier moment opens more, then closes them."""
DDL = """
CREATE TABLE IF NOT EXISTS {artifacts} (
    tenant_id text NOT NULL, artifact_id text NOT NULL, blob uuid, media_type text NOT NULL,
    size bigint NOT NULL, lines bigint NOT NULL, source_system text, stored_by text NOT NULL,
    stored_at timestamptz NOT NULL, block_lines bigint[] NOT NULL, removed_at timestamptz,
    PRIMARY KEY (tenant_id, artifact_id));
CREATE TABLE IF NOT EXISTS {blocks} (
    blob uuid NOT NULL, seq integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (blob, seq));
ALTER TABLE {blocks} ALTER COLUMN data SET STORAGE EXTERNAL;
"""
# EXTERNAL: blocks are stored out of line without compression (bundles are often compressed already, and
# pglz on 1 MiB blocks costs more CPU than the upload itself)


class PostgresArtifactStore:
    def __init__(self, url: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        parts = urlparse(url)
        schema = parse_qs(parts.query).get("schema", ["public"])[0]
        if not schema.replace("_", "a").isalnum() or schema.lower() != schema:
            raise ConfigurationError(f"schema {schema!r} in {url!r}: use lower-case letters, digits and underscores")
        self.conninfo = urlunparse(parts._replace(query=""))
        self.max_bytes = max_bytes
        self.artifacts = Identifier(schema, "caseboard_artifacts")
        self.blocks = Identifier(schema, "caseboard_artifact_blocks")
        self._idle: list[psycopg.Connection[Any]] = []
        self._guard = threading.Lock()
        with self._connect() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"caseboard.ddl/{schema}",))
            try:
                conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
                conn.execute(SQL(DDL).format(artifacts=self.artifacts, blocks=self.blocks))
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (f"caseboard.ddl/{schema}",))

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError as error:
            raise LedgerUnavailable(f"the artifact store cannot reach PostgreSQL: {error}") from error

    def _checkout(self) -> psycopg.Connection[Any]:
        with self._guard:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        return self._connect()

    def _checkin(self, conn: psycopg.Connection[Any]) -> None:
        if conn.closed or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.close()
            return
        with self._guard:
            if len(self._idle) < IDLE_MAX:
                self._idle.append(conn)
                return
        conn.close()

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        conn = self._checkout()
        try:
            yield conn
        except BaseException:
            conn.close()  # whatever failed, this connection is not reused
            raise
        self._checkin(conn)

    def put(
        self,
        tenant_id: str,
        chunks: Iterable[bytes],
        *,
        stored_by: str,
        media_type: str = DEFAULT_MEDIA_TYPE,
        source_system: str | None = None,
    ) -> Stored:
        intake = Intake(self.max_bytes)
        blob = uuid.uuid4()
        insert_block = SQL("INSERT INTO {} (blob, seq, data) VALUES (%s, %s, %b)").format(self.blocks)
        with self._conn() as conn, conn.transaction() as tx, conn.cursor() as cursor:
            # one transaction: rolled back on any error, when the client goes away, or when the process dies
            for seq, block in enumerate(intake.blocks(chunks)):
                cursor.execute(insert_block, (blob, seq, block), prepare=True)
            row = cursor.execute(
                SQL(
                    "INSERT INTO {t} AS a (tenant_id, artifact_id, blob, media_type, size, lines, source_system,"
                    " stored_by, stored_at, block_lines) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now(), %s)"
                    " ON CONFLICT (tenant_id, artifact_id) DO UPDATE SET blob = excluded.blob,"
                    " media_type = excluded.media_type, source_system = excluded.source_system,"
                    " stored_by = excluded.stored_by, stored_at = excluded.stored_at, removed_at = NULL"
                    " WHERE a.removed_at IS NOT NULL RETURNING " + COLUMNS
                ).format(t=self.artifacts),
                (
                    tenant_id,
                    intake.artifact_id,
                    blob,
                    media_type,
                    intake.size,
                    intake.lines,
                    source_system,
                    stored_by,
                    intake.block_lines,
                ),
            ).fetchone()
            if row is None:
                raise psycopg.Rollback(tx)  # these bytes are stored already: keep the first upload's
        if row is None:
            return Stored(self.meta(tenant_id, intake.artifact_id), created=False)
        return Stored(_meta(row), created=True)

    def _row(self, conn: psycopg.Connection[Any], tenant_id: str, artifact_id: str) -> tuple[ArtifactMeta, Any]:
        if ARTIFACT_ID_RE.fullmatch(artifact_id) is None:
            raise ArtifactNotFound(artifact_id)
        row = conn.execute(
            SQL("SELECT " + COLUMNS + ", blob FROM {} WHERE tenant_id = %s AND artifact_id = %s").format(
                self.artifacts
            ),
            (tenant_id, artifact_id),
        ).fetchone()
        if row is None:
            raise ArtifactNotFound(artifact_id)
        meta = _meta(row[:-1])
        if meta.removed_at is not None:
            raise ArtifactNotFound(artifact_id, removed=True)
        return meta, row[-1]

    def meta(self, tenant_id: str, artifact_id: str) -> ArtifactMeta:
        with self._conn() as conn:
            return self._row(conn, tenant_id, artifact_id)[0]

    def _stream(self, tenant_id: str, artifact_id: str, span: Span | None) -> Iterator[bytes]:
        conn = self._checkout()
        try:
            meta, blob = self._row(conn, tenant_id, artifact_id)
            if span is not None and not span.inside(meta.size, meta.lines):
                raise RangeOutside(artifact_id, span, meta.size, meta.lines)
        except BaseException:
            self._checkin(conn)
            raise
        if span is not None and span.unit == "bytes":
            return self._range(conn, blob, span.first, span.last + 1)
        start = 0 if span is None else start_block(span, meta.block_lines)
        blocks = self._blocks(conn, blob, start)
        return blocks if span is None else cut(span, blocks, start, meta.block_lines)

    def _blocks(self, conn: psycopg.Connection[Any], blob: Any, start: int) -> Iterator[bytes]:
        query = SQL("SELECT data FROM {} WHERE blob = %s AND seq = %s").format(self.blocks)
        try:
            seq = start
            while True:
                row = conn.execute(query, (blob, seq), prepare=True, binary=True).fetchone()
                if row is None:
                    return
                yield bytes(row[0])
                seq += 1
        finally:
            self._checkin(conn)

    def _range(self, conn: psycopg.Connection[Any], blob: Any, start: int, end: int) -> Iterator[bytes]:
        """Bytes [start, end), each block's part cut by the server (substring), one block per query."""
        query = SQL("SELECT substring(data from %s for %s) FROM {} WHERE blob = %s AND seq = %s").format(self.blocks)
        try:
            offset = start
            while offset < end:
                seq, within = divmod(offset, BLOCK)
                length = min(end - offset, BLOCK - within)
                row = conn.execute(query, (within + 1, length, blob, seq), prepare=True, binary=True).fetchone()
                if row is None:
                    return
                yield bytes(row[0])
                offset += length
        finally:
            self._checkin(conn)

    def read(self, tenant_id: str, artifact_id: str) -> Iterator[bytes]:
        return self._stream(tenant_id, artifact_id, None)

    def excerpt(self, tenant_id: str, artifact_id: str, span: Span) -> Iterator[bytes]:
        return self._stream(tenant_id, artifact_id, span)

    def list(self, tenant_id: str) -> list[ArtifactMeta]:
        with self._conn() as conn:
            rows = conn.execute(
                SQL("SELECT " + COLUMNS + " FROM {} WHERE tenant_id = %s ORDER BY stored_at, artifact_id").format(
                    self.artifacts
                ),
                (tenant_id,),
            ).fetchall()
        return [_meta(row) for row in rows]

    def remove(self, tenant_id: str, artifact_id: str) -> bool:
        with self._conn() as conn, conn.transaction():
            row = conn.execute(
                SQL(
                    "WITH old AS (SELECT tenant_id, artifact_id, blob FROM {t} WHERE tenant_id = %s"
                    " AND artifact_id = %s AND removed_at IS NULL FOR UPDATE)"
                    " UPDATE {t} AS a SET removed_at = now(), blob = NULL FROM old"
                    " WHERE a.tenant_id = old.tenant_id AND a.artifact_id = old.artifact_id RETURNING old.blob"
                ).format(t=self.artifacts),
                (tenant_id, artifact_id),
            ).fetchone()
            if row is None:
                return False
            conn.execute(SQL("DELETE FROM {} WHERE blob = %s").format(self.blocks), (row[0],))
        return True

    def resolve(self, tenant_id: str, cited: Cited) -> CitationFacts | None:
        try:
            meta = self.meta(tenant_id, cited.artifact)
            return facts(meta.size, meta.lines, cited.span, lambda: self._stream(tenant_id, cited.artifact, cited.span))
        except ArtifactNotFound:
            return None

    def close(self) -> None:
        with self._guard:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _meta(row: Any) -> ArtifactMeta:
    artifact_id, tenant_id, media_type, size, lines, source_system, stored_by, stored_at, block_lines, removed = row
    return ArtifactMeta(
        artifact_id=artifact_id,
        tenant_id=tenant_id,
        media_type=media_type,
        size=size,
        lines=lines,
        source_system=source_system,
        stored_by=stored_by,
        stored_at=stored_at,
        block_lines=tuple(block_lines),
        removed_at=removed,
    )
