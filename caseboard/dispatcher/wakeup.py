"""Waking the dispatcher: a NOTIFY sent after each commit, outside its transaction, and a LISTEN that waits.

A NOTIFY inside the commit transaction would take PostgreSQL's database-wide notification lock at commit
and serialize every writer. ``CommitNotifier`` is instead a thread with its own connection: the writer only
sets an event (no round trip on its critical path) and the thread sends one NOTIFY for however many
commits happened meanwhile, and at most one every ``MIN_GAP_S``. A lost wake-up only delays: the dispatcher
polls as a fallback (docs/adr/0012-wakeups-after-commit.md).
"""

from __future__ import annotations

import threading
import time

import psycopg
import structlog
from psycopg.sql import SQL, Identifier

from caseboard.database_url import DatabaseUrl
from caseboard.ledger import libpq
from caseboard.ledger.connections import safe_conninfo

log = structlog.get_logger("caseboard.dispatcher")


def channel_for(url: DatabaseUrl | str) -> str:
    """The channel of the ledger's schema: writers and dispatchers of one schema meet on it."""
    return f"caseboard_commits_{DatabaseUrl.parse(url).schema}"[:63]


class CommitNotifier:
    MIN_GAP_S = 0.005
    """After a NOTIFY, the next one waits at least this long, gathering the commits of the meantime: a busy
    writer sends at most 200 a second instead of one per commit (each costs the writing process about as
    much CPU as a commit's own INSERT), and a lone commit is still announced at once."""

    def __init__(self, url: DatabaseUrl | str) -> None:
        self.database = DatabaseUrl.parse(url)
        self.channel = channel_for(self.database)
        self._wanted = threading.Event()
        self._pending = False  # a commit is waiting for the next NOTIFY: later ones need not set the event
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="caseboard-commit-notifier", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Called by the writer after each commit. Only the first commit after a NOTIFY sets the event;
        a commit that sees one pending is announced by that NOTIFY, which is sent after it committed."""
        if not self._pending:
            self._pending = True
            self._wanted.set()

    def close(self) -> None:
        self._stopping = True
        self._wanted.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        statement = b""
        conn: psycopg.Connection[tuple[object, ...]] | None = None
        while True:
            self._wanted.wait()
            if self._stopping:
                break
            self._wanted.clear()
            self._pending = False  # before the NOTIFY: a commit that reads it False sets the event again
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(autocommit=True, **safe_conninfo(self.database.conninfo))
                    statement = SQL("NOTIFY {}").format(Identifier(self.channel)).as_bytes(conn)
                libpq.command(conn.pgconn, statement)
            except psycopg.Error as error:
                log.warning("commit_notify_failed", error=str(error))
                conn = None
            time.sleep(self.MIN_GAP_S)
        if conn is not None:
            conn.close()


class CommitListener:
    """Blocks until a commit is announced or ``timeout`` passes (the fallback poll). A lost connection (the
    database restarted) counts as a wake-up, so that the dispatcher reads the outbox again, and the next
    wait listens on a new connection (ADR 0040)."""

    def __init__(self, url: DatabaseUrl | str) -> None:
        self.database = DatabaseUrl.parse(url)
        self.channel = channel_for(self.database)
        self.conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._listen()

    def _listen(self) -> None:
        self.conn = psycopg.connect(autocommit=True, **safe_conninfo(self.database.conninfo))
        self.conn.execute(SQL("LISTEN {}").format(Identifier(self.channel)))

    def wait(self, timeout: float) -> bool:
        woke = False
        try:
            if self.conn is None or self.conn.closed:
                self._listen()
            assert self.conn is not None
            for _ in self.conn.notifies(timeout=timeout, stop_after=1):
                woke = True
        except psycopg.Error as error:
            log.warning("commit_listen_failed", error=" ".join(str(error).split()))
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            time.sleep(min(timeout, 0.5))  # a database that is down is not asked again at once
            return True
        return woke

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
