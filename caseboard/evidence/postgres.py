"""The production artifact store: PostgreSQL tables of their own, in the ledger's schema (docs/adr/0080).

``caseboard_artifacts`` holds one row of metadata per (tenant, artifact); ``caseboard_artifact_blocks`` the
bytes, one row per block of ``BLOCK`` bytes, keyed by an upload id (``blob``). An upload inserts its blocks
as they stream in and the metadata row last, all in one transaction: a killed upload rolls back and leaves
nothing, and no more than one block is in this process's memory. Of two uploads of the same bytes, the
metadata insert of the second waits for the first and then finds the row (``ON CONFLICT DO NOTHING``), so it
rolls its blocks back and returns the first's artifact. A read fetches one block per query; an excerpt's
first query checks the artifact and brings the start of its range (docs/adr/0083).
"""

from __future__ import annotations

import builtins
import hashlib
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo
from psycopg.sql import SQL, Identifier

from caseboard.database_url import DatabaseUrl
from caseboard.domain.citations import ARTIFACT_ID_RE, CitationFacts, Cited, Span
from caseboard.domain.errors import LedgerUnavailable
from caseboard.evidence.model import (
    BLOCK,
    DEFAULT_MAX_BYTES,
    DEFAULT_MEDIA_TYPE,
    LINE_STEP,
    ArtifactMeta,
    ArtifactNotFound,
    RangeOutside,
    Stored,
)
from caseboard.evidence.scan import Intake, cut_lines, facts, line_start
from caseboard.ledger.connections import connection_failed, usable

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
ALTER TABLE {artifacts} ADD COLUMN IF NOT EXISTS line_step integer, ADD COLUMN IF NOT EXISTS step_lines bigint[];
"""
# line_step, step_lines: the line index of docs/adr/0083, NULL in rows stored before it (their line excerpts
# start from the block)
INDEX_CACHE = 256
"""Line indexes kept in memory, by artifact id (an index is a function of the bytes, so it never goes stale)."""
# EXTERNAL: blocks are stored out of line without compression (bundles are often compressed already, and
# pglz on 1 MiB blocks costs more CPU than the upload itself)


class PostgresArtifactStore:
    def __init__(self, url: DatabaseUrl | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        database = DatabaseUrl.parse(url)
        schema = database.schema
        self.conninfo = make_conninfo(**database.conninfo)
        self.max_bytes = max_bytes
        self.artifacts = Identifier(schema, "caseboard_artifacts")
        self.blocks = Identifier(schema, "caseboard_artifact_blocks")
        self._idle: list[tuple[psycopg.Connection[Any], float]] = []  # with when it was given back
        self._indexes: dict[str, tuple[int, tuple[int, ...]]] = {}
        self._excerpt_query = SQL(
            "SELECT a.size, a.lines, a.removed_at, a.blob, substring(b.data from %s for %s) FROM {t} AS a"
            " LEFT JOIN {b} AS b ON b.blob = a.blob AND b.seq = %s WHERE a.tenant_id = %s AND a.artifact_id = %s"
        ).format(t=self.artifacts, b=self.blocks)
        self._piece_query = SQL("SELECT substring(data from %s for %s) FROM {} WHERE blob = %s AND seq = %s").format(
            self.blocks
        )
        self._insert_block = SQL("INSERT INTO {} (blob, seq, data) VALUES (%s, %s, %b)").format(self.blocks)
        self._insert_meta = SQL(
            "INSERT INTO {t} AS a (tenant_id, artifact_id, blob, media_type, size, lines, source_system,"
            " stored_by, stored_at, block_lines, line_step, step_lines)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, now(), %s, %s, %s)"
            " ON CONFLICT (tenant_id, artifact_id) DO UPDATE SET blob = excluded.blob,"
            " media_type = excluded.media_type, source_system = excluded.source_system,"
            " stored_by = excluded.stored_by, stored_at = excluded.stored_at, removed_at = NULL"
            " WHERE a.removed_at IS NOT NULL RETURNING " + COLUMNS
        ).format(t=self.artifacts)
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
        """An idle connection, checked as the ledger's pool checks one (``ledger/connections.py``, ADR 0145), or a
        new one."""
        with self._guard:
            conn, since = self._idle.pop() if self._idle else (None, 0.0)
        if conn is not None and not conn.closed:
            if usable(conn, since):
                return conn
            self._drop_idle()  # the server ended this session: it ended the others too
        return self._connect()

    def _checkin(self, conn: psycopg.Connection[Any]) -> None:
        if conn.closed or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            conn.close()
            return
        with self._guard:
            if len(self._idle) < IDLE_MAX:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        conn = self._checkout()
        try:
            yield conn
        except BaseException as error:
            conn.close()  # whatever failed, this connection is not reused
            if connection_failed(error):  # the database went away meanwhile: 503, its own words logged
                self._drop_idle()
                raise LedgerUnavailable(f"the artifact store lost its connection to PostgreSQL: {error}") from error
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
        durable: bool = True,
    ) -> Stored:
        intake = Intake(self.max_bytes)
        blob = uuid.uuid4()
        with self._conn() as conn, conn.transaction() as tx, conn.cursor() as cursor:
            # one transaction: rolled back on any error, when the client goes away, or when the process dies
            if not durable:  # flushed by the citing commit's own flush, which comes after it (ADR 0177)
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
            for seq, block in enumerate(intake.blocks(chunks)):
                cursor.execute(self._insert_block, (blob, seq, block), prepare=True)
            row = cursor.execute(
                self._insert_meta,
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
                    LINE_STEP,
                    intake.step_lines,
                ),
                prepare=True,
            ).fetchone()
            if row is None:  # these bytes are stored already: keep the first upload's
                if not durable:
                    raise psycopg.Rollback(tx)
                # they may have been stored without a flush of their own (ADR 0177): this transaction
                # drops its blocks and commits, and its commit flushes the WAL up to and past theirs
                cursor.execute(SQL("DELETE FROM {} WHERE blob = %s").format(self.blocks), (blob,))
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
        if span is not None:
            return self._excerpt(tenant_id, artifact_id, span)
        conn = self._checkout()
        try:
            blob = self._row(conn, tenant_id, artifact_id)[1]
        except BaseException:
            self._checkin(conn)
            raise
        return self._blocks(conn, blob, 0)

    def _excerpt(self, tenant_id: str, artifact_id: str, span: Span) -> Iterator[bytes]:
        """One query checks the artifact (tenant, retention, range) and brings the range's first piece: the
        bytes asked for up to their block's end, or, for lines, up to ``2 * LINE_STEP`` bytes from the line
        index's entry before the first line (docs/adr/0083); further pieces follow one query each."""
        if ARTIFACT_ID_RE.fullmatch(artifact_id) is None:
            raise ArtifactNotFound(artifact_id)
        conn = self._checkout()
        try:
            if span.unit == "bytes":
                offset, newlines, end = span.first, 0, span.last + 1
            else:
                offset, newlines = line_start(span.first, *self._line_index(conn, tenant_id, artifact_id))
                end = None
            seq, within = divmod(offset, BLOCK)
            want = BLOCK - within if end is None else end - offset
            length = min(want, BLOCK - within, 2 * LINE_STEP if end is None else BLOCK)
            row = conn.execute(
                self._excerpt_query,
                (within + 1, length, seq, tenant_id, artifact_id),
                prepare=True,
                binary=True,
            ).fetchone()
            if row is None:
                raise ArtifactNotFound(artifact_id)
            size, lines, removed, blob, data = row
            if removed is not None:
                raise ArtifactNotFound(artifact_id, removed=True)
            if not span.inside(size, lines):
                raise RangeOutside(artifact_id, span, size, lines)
            first = b"" if data is None else bytes(data)
            if end is not None and offset + len(first) >= end:
                self._checkin(conn)  # the whole range came with the check
                return iter((first,))
        except BaseException:
            self._checkin(conn)
            raise
        pieces = self._pieces(conn, blob, first, offset + len(first), size if end is None else end, end is None)
        return pieces if end is not None else cut_lines(span.first, span.last, newlines, pieces)

    def _line_index(
        self, conn: psycopg.Connection[Any], tenant_id: str, artifact_id: str
    ) -> tuple[int, tuple[int, ...]]:
        found = self._indexes.get(artifact_id)
        if found is not None:
            return found
        row = conn.execute(
            SQL(
                "SELECT line_step, step_lines, block_lines FROM {} WHERE tenant_id = %s AND artifact_id = %s"
                " AND removed_at IS NULL"
            ).format(self.artifacts),
            (tenant_id, artifact_id),
        ).fetchone()
        if row is None:
            return BLOCK, ()  # the excerpt's own query says what is missing
        found = (row[0], tuple(row[1])) if row[1] is not None else (BLOCK, tuple(row[2]))
        with self._guard:
            if len(self._indexes) >= INDEX_CACHE:
                self._indexes.clear()
            self._indexes[artifact_id] = found
        return found

    def _pieces(
        self, conn: psycopg.Connection[Any], blob: Any, first: bytes, start: int, end: int, growing: bool
    ) -> Iterator[bytes]:
        """``first``, then bytes [start, end) one query per piece: within one block each, doubling from
        ``2 * LINE_STEP`` when ``growing`` (lines: where they end is not known)."""
        query = self._piece_query
        size = 4 * LINE_STEP
        try:
            if first:
                yield first
            offset = start
            while offset < end:
                seq, within = divmod(offset, BLOCK)
                length = min(end - offset, BLOCK - within, size if growing else BLOCK)
                row = conn.execute(query, (within + 1, length, blob, seq), prepare=True, binary=True).fetchone()
                if row is None or not row[0]:
                    return
                yield bytes(row[0])
                offset += len(row[0])
                size = min(size * 2, BLOCK)
        finally:
            self._checkin(conn)

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
        return self.resolve_all(tenant_id, [cited])[0]

    def resolve_all(self, tenant_id: str, cited: Sequence[Cited]) -> builtins.list[CitationFacts | None]:
        """A byte range within one block, the common citation, is one run of the excerpt's query (which checks
        the artifact and brings the range, ADR 0083); those of all the citations are sent together, in one
        round trip (``executemany`` in a pipeline), and hashed here. A range of lines, or across blocks, is
        resolved as an excerpt is read (the artifact's metadata, then its pieces)."""
        found: builtins.list[CitationFacts | None] = [None] * len(cited)
        single: builtins.list[int] = []
        for index, one in enumerate(cited):
            span = one.span
            if span.unit == "bytes" and span.first // BLOCK == span.last // BLOCK:
                if ARTIFACT_ID_RE.fullmatch(one.artifact) is not None:
                    single.append(index)
            else:
                found[index] = self._resolve_read(tenant_id, one)
        if not single:
            return found
        rows: builtins.list[Any] = []
        with self._conn() as conn, conn.cursor(binary=True) as cursor:
            cursor.executemany(
                self._excerpt_query,
                [
                    (s.first % BLOCK + 1, s.last - s.first + 1, s.first // BLOCK, tenant_id, cited[i].artifact)
                    for i, s in ((i, cited[i].span) for i in single)
                ],
                returning=True,
            )
            rows = [result.fetchone() for result in cursor.results()]
        for index, row in zip(single, rows, strict=True):
            if row is None or row[2] is not None:
                continue  # no such artifact in the tenant, or removed under retention
            size, lines, _, _, data = row
            span = cited[index].span
            if not span.inside(size, lines):
                found[index] = CitationFacts(size, lines, 0, None)
            else:
                found[index] = CitationFacts(size, lines, len(data), hashlib.sha256(data).hexdigest())
        return found

    def _resolve_read(self, tenant_id: str, cited: Cited) -> CitationFacts | None:
        try:
            meta = self.meta(tenant_id, cited.artifact)
            return facts(
                meta.size, meta.lines, cited.span, partial(self._stream, tenant_id, cited.artifact, cited.span)
            )
        except ArtifactNotFound:
            return None

    def close(self) -> None:
        self._drop_idle()

    def _drop_idle(self) -> None:
        with self._guard:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
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
