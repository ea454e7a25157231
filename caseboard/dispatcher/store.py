"""What the dispatcher and the consumers keep in the ledger's database (PostgreSQL or SQLite).

    caseboard_dispatch_positions  the follower's position in the outbox, notifications handed over
    caseboard_deliveries          each notification handed to the broker (re-driven while nobody processed it)
    caseboard_processed           per consumer, each notification id: attempts (committed before the work)
                                  and when it was processed (committed with the consumer's own effect)
    caseboard_consumer_stats      duplicates absorbed per consumer
    caseboard_consumer_views      per consumer and workspace, the latest version it has taken in
    caseboard_handoff_attempts    each attempt to deliver a handoff to a webhook, and its outcome

A position is written in the same transaction as the deliveries it covers, and only after the broker
accepted them (docs/adr/0011-outbox-follower.md).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caseboard.database_url import DatabaseUrl
from caseboard.domain.errors import LedgerUnavailable

Position = tuple[int, int]

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS caseboard_dispatch_positions (name TEXT PRIMARY KEY, tx BIGINT NOT NULL, "
    "nid BIGINT NOT NULL, delivered BIGINT NOT NULL DEFAULT 0, updated_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS caseboard_deliveries (notification_id TEXT PRIMARY KEY, queue TEXT NOT NULL, "
    "body TEXT NOT NULL, sent_at DOUBLE PRECISION NOT NULL, sends INTEGER NOT NULL DEFAULT 1)",
    "CREATE TABLE IF NOT EXISTS caseboard_processed (consumer TEXT NOT NULL, notification_id TEXT NOT NULL, "
    "attempts INTEGER NOT NULL DEFAULT 0, processed_at DOUBLE PRECISION, "
    "PRIMARY KEY (consumer, notification_id))",
    "CREATE TABLE IF NOT EXISTS caseboard_consumer_stats (consumer TEXT PRIMARY KEY, "
    "duplicates BIGINT NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS caseboard_consumer_views (consumer TEXT NOT NULL, "
    "workspace_id TEXT NOT NULL, "
    "version BIGINT NOT NULL, PRIMARY KEY (consumer, workspace_id))",
    "CREATE TABLE IF NOT EXISTS caseboard_watched (workspace_id TEXT PRIMARY KEY, version BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS caseboard_handoff_attempts (handoff_id TEXT NOT NULL, workspace_id TEXT NOT NULL, "
    "webhook TEXT NOT NULL, attempt INTEGER NOT NULL, at DOUBLE PRECISION NOT NULL, outcome TEXT NOT NULL, "
    "detail TEXT NOT NULL, PRIMARY KEY (handoff_id, webhook, attempt))",
)


@dataclass(frozen=True)
class Delivery:
    notification_id: str
    queue: str
    body: str


@dataclass(frozen=True)
class Begun:
    duplicate: bool
    attempts: int


class DispatchStore:
    """One class over both engines: the SQL is portable; only placeholders and connections differ."""

    def __init__(self, url: DatabaseUrl | str) -> None:
        database = DatabaseUrl.parse(url)
        self.schema = database.schema
        self._sqlite = database.sqlite_path is not None
        self._lock = threading.Lock()
        if database.sqlite_path is not None:
            self._path: Path = database.sqlite_path
            self._path.parent.mkdir(parents=True, exist_ok=True)
        else:
            from psycopg_pool import ConnectionPool

            self._pool = ConnectionPool(
                min_size=1,
                max_size=8,
                open=True,
                timeout=10,
                kwargs={**database.conninfo, "options": f"-c search_path={self.schema}"},
                check=ConnectionPool.check_connection,  # a session a database restart ended is not reused (ADR 0145)
            )
        with self._tx() as cur:
            if not self._sqlite:  # concurrent CREATE TABLE IF NOT EXISTS can still collide: take turns
                cur.execute("SELECT pg_advisory_xact_lock(hashtext('caseboard_dispatch_schema'))")
            for statement in SCHEMA:
                cur.execute(statement)

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """One transaction; yields a cursor whose ``execute`` takes ``%s`` placeholders on both engines."""
        if self._sqlite:
            with self._lock:
                conn = sqlite3.connect(self._path, timeout=30, isolation_level=None)
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    yield _SqliteCursor(conn.cursor())
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                finally:
                    conn.close()
            return
        import psycopg

        try:
            with self._pool.connection() as pg, pg.cursor() as cur:
                yield cur
        except psycopg.Error as error:
            raise LedgerUnavailable(f"the dispatch store failed: {error}") from error

    def close(self) -> None:
        if not self._sqlite:
            self._pool.close()

    # -- the follower ---------------------------------------------------------------------------------

    def position(self, name: str) -> Position:
        with self._tx() as cur:
            cur.execute("SELECT tx, nid FROM caseboard_dispatch_positions WHERE name = %s", (name,))
            row = cur.fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def advance(self, name: str, position: Position, sent: Sequence[Delivery]) -> None:
        now = time.time()
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO caseboard_dispatch_positions (name, tx, nid, delivered, updated_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET tx = excluded.tx, "
                "nid = excluded.nid, "
                "delivered = caseboard_dispatch_positions.delivered + excluded.delivered, "
                "updated_at = excluded.updated_at",
                (name, position[0], position[1], len(sent), now),
            )
            cur.executemany(
                "INSERT INTO caseboard_deliveries (notification_id, queue, body, sent_at) "
                "VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (notification_id) DO UPDATE SET sent_at = excluded.sent_at, "
                "sends = caseboard_deliveries.sends + 1",
                [(d.notification_id, d.queue, d.body, now) for d in sent],
            )

    def unprocessed(self, older_than_s: float, limit: int = 500) -> list[Delivery]:
        """Handed over at least ``older_than_s`` ago and processed by nobody: lost or stuck."""
        with self._tx() as cur:
            cur.execute(
                "SELECT d.notification_id, d.queue, d.body FROM caseboard_deliveries d WHERE d.sent_at < %s "
                "AND NOT EXISTS (SELECT 1 FROM caseboard_processed p WHERE p.consumer = d.queue "
                "AND p.notification_id = d.notification_id AND p.processed_at IS NOT NULL) "
                "ORDER BY d.sent_at LIMIT %s",
                (time.time() - older_than_s, limit),
            )
            return [Delivery(*row) for row in cur.fetchall()]

    def resent(self, ids: Sequence[str]) -> None:
        now = time.time()
        with self._tx() as cur:
            for nid in ids:
                cur.execute(
                    "UPDATE caseboard_deliveries SET sent_at = %s, sends = sends + 1 WHERE notification_id = %s",
                    (now, nid),
                )

    # -- the consumers --------------------------------------------------------------------------------

    def begin(self, consumer: str, notification_id: str) -> Begun:
        """Counts an attempt, committed before the work; a processed notification is a duplicate."""
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO caseboard_processed (consumer, notification_id, attempts) VALUES (%s, %s, 1) "
                "ON CONFLICT (consumer, notification_id) "
                "DO UPDATE SET attempts = caseboard_processed.attempts + 1 "
                "WHERE caseboard_processed.processed_at IS NULL",
                (consumer, notification_id),
            )
            if cur.rowcount == 0:
                self._duplicate(cur, consumer)
                return Begun(True, 0)
            cur.execute(
                "SELECT attempts FROM caseboard_processed WHERE consumer = %s AND notification_id = %s",
                (consumer, notification_id),
            )
            return Begun(False, int(cur.fetchone()[0]))

    def finish(
        self, consumer: str, notification_id: str, views: dict[str, int] | None = None, *, watch: bool = False
    ) -> bool:
        """Marks the notification processed together with the consumer's own effect (its views); ``watch``:
        the views' workspaces are also the controllers' to watch (``watched``, docs/adr/0189).

        False when another delivery of the same notification finished first: nothing is written."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE caseboard_processed SET processed_at = %s "
                "WHERE consumer = %s AND notification_id = %s AND processed_at IS NULL",
                (time.time(), consumer, notification_id),
            )
            if cur.rowcount == 0:
                self._duplicate(cur, consumer)
                return False
            for workspace_id, version in (views or {}).items():
                cur.execute(
                    "INSERT INTO caseboard_consumer_views (consumer, workspace_id, version) "
                    "VALUES (%s, %s, %s) "
                    "ON CONFLICT (consumer, workspace_id) DO UPDATE SET version = excluded.version "
                    "WHERE excluded.version > caseboard_consumer_views.version",
                    (consumer, workspace_id, version),
                )
                if watch:
                    cur.execute(
                        "INSERT INTO caseboard_watched (workspace_id, version) VALUES (%s, %s) "
                        "ON CONFLICT (workspace_id) DO UPDATE SET version = excluded.version "
                        "WHERE excluded.version > caseboard_watched.version",
                        (workspace_id, version),
                    )
        return True

    def watched(self) -> list[str]:
        """The workspaces whose snapshot notice a controller took (or a host without one absorbed, none being
        announced) and that no controller has seen leave the investigation since: what a controller that starts
        decides on before any notification names them (docs/adr/0189, 0191)."""
        with self._tx() as cur:
            cur.execute("SELECT workspace_id FROM caseboard_watched ORDER BY workspace_id")
            return [str(row[0]) for row in cur.fetchall()]

    def unwatch(self, workspace_id: str, version: int) -> None:
        """Stop watching a workspace that is no longer under investigation at ``version``; a later version's
        notice, a reopening's, has already watched it again and stays."""
        with self._tx() as cur:
            cur.execute(
                "DELETE FROM caseboard_watched WHERE workspace_id = %s AND version <= %s", (workspace_id, version)
            )

    def processed(self, notices: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of ``notices`` (consumer, notification id) that their consumer has processed."""
        done = set()
        with self._tx() as cur:
            for consumer, notification_id in notices:
                cur.execute(
                    "SELECT 1 FROM caseboard_processed WHERE consumer = %s AND notification_id = %s "
                    "AND processed_at IS NOT NULL",
                    (consumer, notification_id),
                )
                if cur.fetchone() is not None:
                    done.add((consumer, notification_id))
        return done

    def view_version(self, consumer: str, workspace_id: str) -> int:
        with self._tx() as cur:
            cur.execute(
                "SELECT version FROM caseboard_consumer_views WHERE consumer = %s AND workspace_id = %s",
                (consumer, workspace_id),
            )
            row = cur.fetchone()
        return int(row[0]) if row else 0

    def _duplicate(self, cur: Any, consumer: str) -> None:
        cur.execute(
            "INSERT INTO caseboard_consumer_stats (consumer, duplicates) VALUES (%s, 1) "
            "ON CONFLICT (consumer) DO UPDATE SET duplicates = caseboard_consumer_stats.duplicates + 1",
            (consumer,),
        )

    # -- handoff deliveries (caseboard/handoff/deliver.py) ---------------------------------------------------

    def handoff_attempted(self, handoff_id: str, workspace_id: str, webhook: str, outcome: str, detail: str) -> int:
        """Records one attempt to deliver ``handoff_id`` to ``webhook`` (``delivered`` or ``failed``, with what
        happened); returns its number, from 1. Two copies of one notification delivered side by side number
        their attempts one after the other: on PostgreSQL a lock on the (handoff, webhook) pair, held to the
        commit, orders them (SQLite's ``BEGIN IMMEDIATE`` already does)."""
        with self._tx() as cur:
            if not self._sqlite:
                cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{handoff_id}\n{webhook}",))
            cur.execute(
                "INSERT INTO caseboard_handoff_attempts (handoff_id, workspace_id, webhook, attempt, at, outcome, "
                "detail) SELECT %s, %s, %s, coalesce(max(attempt), 0) + 1, %s, %s, %s "
                "FROM caseboard_handoff_attempts WHERE handoff_id = %s AND webhook = %s",
                (handoff_id, workspace_id, webhook, time.time(), outcome, detail, handoff_id, webhook),
            )
            cur.execute(
                "SELECT max(attempt) FROM caseboard_handoff_attempts WHERE handoff_id = %s AND webhook = %s",
                (handoff_id, webhook),
            )
            return int(cur.fetchone()[0])

    def handoff_delivered(self, handoff_id: str) -> set[str]:
        """The webhooks ``handoff_id`` was delivered to."""
        with self._tx() as cur:
            cur.execute(
                "SELECT DISTINCT webhook FROM caseboard_handoff_attempts WHERE handoff_id = %s AND outcome = %s",
                (handoff_id, "delivered"),
            )
            return {str(row[0]) for row in cur.fetchall()}

    def handoff_attempts(self, workspace_id: str) -> list[dict[str, Any]]:
        """Every attempt to deliver a handoff of ``workspace_id`` (its key), oldest first."""
        with self._tx() as cur:
            cur.execute(
                "SELECT handoff_id, webhook, attempt, at, outcome, detail FROM caseboard_handoff_attempts "
                "WHERE workspace_id = %s ORDER BY at, handoff_id, webhook, attempt",
                (workspace_id,),
            )
            rows = cur.fetchall()
        names = ("handoff_id", "webhook", "attempt", "at", "outcome", "detail")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def handoff_summary(self) -> dict[str, int]:
        """Across every workspace: (handoff, webhook) pairs delivered, and those not delivered (yet)."""
        with self._tx() as cur:
            cur.execute(
                "SELECT count(*) FILTER (WHERE delivered), count(*) FILTER (WHERE NOT delivered) FROM (SELECT "
                "max(CASE WHEN outcome = 'delivered' THEN 1 ELSE 0 END) = 1 AS delivered "
                "FROM caseboard_handoff_attempts GROUP BY handoff_id, webhook) AS pairs"
            )
            delivered, undelivered = cur.fetchone()
        return {"delivered": int(delivered or 0), "undelivered": int(undelivered or 0)}

    # -- retention ------------------------------------------------------------------------------------

    def prune(self, older_than_s: float) -> dict[str, int]:
        """Forget notifications processed more than ``older_than_s`` ago: their delivery rows, then their
        processed rows. Nothing unprocessed is touched, however old: the re-drive still needs it.

        A processed row is what makes a redelivery a duplicate; one redelivered after its row is gone would
        be processed again. Redeliveries come within minutes (a dead worker's heartbeat, a re-drive), so
        the window should be days (``caseboard outbox prune`` takes 7 by default)."""
        cutoff = time.time() - older_than_s
        with self._tx() as cur:
            cur.execute(
                "DELETE FROM caseboard_deliveries WHERE sent_at < %s AND EXISTS (SELECT 1 FROM "
                "caseboard_processed p WHERE p.consumer = caseboard_deliveries.queue "
                "AND p.notification_id = caseboard_deliveries.notification_id AND p.processed_at < %s)",
                (cutoff, cutoff),
            )
            deliveries = cur.rowcount
            cur.execute(
                "DELETE FROM caseboard_processed WHERE processed_at < %s AND NOT EXISTS (SELECT 1 FROM "
                "caseboard_deliveries d WHERE d.queue = caseboard_processed.consumer "
                "AND d.notification_id = caseboard_processed.notification_id)",
                (cutoff,),
            )
            processed = cur.rowcount
        return {"deliveries_pruned": deliveries, "processed_pruned": processed}

    # -- reporting ------------------------------------------------------------------------------------

    def status(self, name: str) -> dict[str, Any]:
        with self._tx() as cur:
            cur.execute("SELECT tx, nid, delivered FROM caseboard_dispatch_positions WHERE name = %s", (name,))
            row = cur.fetchone()
            cur.execute("SELECT coalesce(sum(duplicates), 0) FROM caseboard_consumer_stats")
            duplicates = int(cur.fetchone()[0])
            cur.execute("SELECT count(*) FROM caseboard_processed WHERE processed_at IS NOT NULL")
            processed = int(cur.fetchone()[0])
            cur.execute(
                "SELECT count(*) FROM caseboard_deliveries d WHERE NOT EXISTS "
                "(SELECT 1 FROM caseboard_processed p WHERE p.consumer = d.queue "
                "AND p.notification_id = d.notification_id AND p.processed_at IS NOT NULL)"
            )
            unprocessed = int(cur.fetchone()[0])
        return {
            "position": [int(row[0]), int(row[1])] if row else [0, 0],
            "delivered": int(row[2]) if row else 0,
            "processed": processed,
            "unprocessed": unprocessed,
            "duplicates_absorbed": duplicates,
        }

    def dispatchers(self) -> list[str]:
        """The names of the dispatchers that have stored a position, sorted."""
        with self._tx() as cur:
            cur.execute("SELECT name FROM caseboard_dispatch_positions ORDER BY name")
            return [str(name) for (name,) in cur.fetchall()]

    def processed_ids(self) -> list[tuple[str, str, int]]:
        with self._tx() as cur:
            cur.execute(
                "SELECT consumer, notification_id, attempts FROM caseboard_processed "
                "WHERE processed_at IS NOT NULL ORDER BY consumer, notification_id"
            )
            return [(str(c), str(n), int(a)) for c, n, a in cur.fetchall()]


class _SqliteCursor:
    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._cursor.execute(sql.replace("%s", "?").replace("DOUBLE PRECISION", "REAL"), params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._cursor.executemany(sql.replace("%s", "?"), rows)

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()
