"""What the quickstart says while the loop runs: each new commit of the workspace in one line, and the waits
for what the real servers do (a series in Prometheus, an alert firing), each bounded and watching a process."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from caseboard.domain.errors import ConfigurationError
from caseboard.pilot.servers import Child


class Follower:
    """Says what each new commit of the workspace did, in one line; after a link, the hypotheses' statuses."""

    def __init__(self, app: Any, key: str, say: Callable[[str], None]) -> None:
        self.app = app
        self.key = key
        self.say = say
        self.seen = 0

    def follow(self) -> None:
        if self.app.ledger.head(self.key) <= self.seen:
            return
        for commit in self.app.ledger.read(self.key, self.seen):
            for line in lines(commit):
                self.say(f"v{commit.version} {line}")
            self.seen = commit.version
            if any(i.type == "link" for i in commit.items):
                shown = self.app.workspaces.show(self.key, commit.version)
                for hypothesis in shown["hypotheses"]:
                    self.say(f"   hypothesis {hypothesis['id']} is now {hypothesis['status']}")


def lines(commit: Any) -> Iterator[str]:
    who = commit.author.principal
    for item in commit.items:
        kind = item.type
        if kind == "open":
            yield f"workspace {commit.workspace_id} opened at version {commit.version} by {who} (Alertmanager intake)"
        elif kind == "observation":
            yield f"observation by {who}: {item.statement}"
        elif kind == "cycle":
            yield f"cycle {item.number}: the controller schedules {', '.join(item.scheduled)}"
        elif kind == "work_request":
            yield f"{who} requests the check {item.request_id} ({item.kind}): {item.target}"
        elif kind == "work_result":
            summary = " ".join(str(item.summary).split())
            yield f"check {item.request_id} {item.status} by {who} against the real source: {summary}"
        elif kind == "hypothesis":
            yield f"{who} proposes {item.id}: {item.statement}"
        elif kind == "verification":
            yield f"{who} verifies {item.claim} with {item.check}: {item.result}"
        elif kind == "link":
            yield f"{who}: {item.observation} {item.relation} {item.hypothesis}"
        elif kind == "status":
            yield f"the workspace escalates: {item.to} ({item.reason})"


def poll(what: str, check: Callable[[], bool], timeout: float, watched: list[Child]) -> None:
    """Returns once ``check`` holds; one line when ``timeout`` passes first or a watched process exits."""
    end = time.monotonic() + timeout
    while not check():
        for running in watched:
            if running.exited():
                status = running.process.returncode
                raise ConfigurationError(f"{running.name} exited (status {status}) before {what}; see {running.log}")
        if time.monotonic() > end:
            folder = watched[0].log.parent if watched and watched[0].log else "the run folder"
            raise ConfigurationError(
                f"gave up waiting for {what} after {timeout:.0f} s; each process's log is in {folder}"
            )
        time.sleep(0.2)


def pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # not up yet
        return False


def has_series(prometheus: str, expr: str) -> bool:
    try:
        found = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=2).json()
        return bool(found["data"]["result"])
    except (httpx.HTTPError, ValueError, KeyError):
        return False


def firing(prometheus: str) -> bool:
    try:
        alerts = httpx.get(f"{prometheus}/api/v1/alerts", timeout=2).json()["data"]["alerts"]
    except (httpx.HTTPError, ValueError, KeyError):
        return False
    return any(a.get("state") == "firing" for a in alerts)
