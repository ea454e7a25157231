"""The artifact routes: streamed uploads by specialists and operators, tenant-scoped reads and excerpts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.http_server import RunningServer, running_server

LOG = b"".join(b"14:%02d auth_failure payments-api-%d\n" % (m, m % 3) for m in range(30))


@pytest.fixture(params=["files", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningServer]:
    url = f"sqlite:///{tmp_path}/ledger.db" if request.param == "files" else request.getfixturevalue("postgres_url")
    with running_server(url) as running:
        yield running


def test_an_upload_is_stored_once_and_read_back_whole_and_by_excerpt(server: RunningServer) -> None:
    specialist = server.as_("log-specialist", "specialist")
    first = specialist.post("/artifacts?source_system=auth-logs", content=LOG, headers={"Content-Type": "text/plain"})
    again = specialist.post("/artifacts", content=iter([LOG[:50], LOG[50:]]))
    assert (first.status_code, again.status_code) == (201, 200)
    aid = first.json()["artifact_id"]
    assert again.json()["artifact_id"] == aid and first.json()["stored_by"] == "log-specialist"
    whole = specialist.get(f"/artifacts/{aid}")
    assert (whole.status_code, whole.content) == (200, LOG)
    assert whole.headers["content-type"].startswith("text/plain")
    lines = specialist.get(f"/artifacts/{aid}/excerpt", params={"lines": "2-3"})
    assert lines.content == b"".join(LOG.splitlines(keepends=True)[1:3])
    assert specialist.get(f"/artifacts/{aid}/excerpt", params={"bytes": "0-4"}).content == LOG[:5]
    outside = specialist.get(f"/artifacts/{aid}/excerpt", params={"lines": "30-31"})
    assert (outside.status_code, outside.json()["reason"], outside.json()["field"]) == (422, "invalid", "lines")
    assert [a["artifact_id"] for a in specialist.get("/artifacts").json()["artifacts"]] == [aid]


def test_another_tenants_artifact_answers_404_exactly_like_a_missing_one(server: RunningServer) -> None:
    aid = server.as_("spec-a", "specialist").post("/artifacts", content=LOG).json()["artifact_id"]
    other = server.as_("spec-b", "specialist", tenant="tenant-b")
    missing_id = "sha256:" + "2" * 64
    for path in ("/artifacts/{}", "/artifacts/{}/excerpt?lines=1-1"):
        theirs, missing = other.get(path.format(aid)), other.get(path.format(missing_id))
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["message"].replace(aid, "ID") == missing.json()["message"].replace(missing_id, "ID")
    assert other.get("/artifacts").json()["artifacts"] == []


def test_only_specialists_and_operators_may_upload(server: RunningServer) -> None:
    for role in ("planner", "verifier", "reporter", "controller"):
        answer = server.as_(f"{role}-1", role).post("/artifacts", content=LOG)
        assert (answer.status_code, answer.json()["reason"]) == (403, "forbidden")
    assert server.as_("op", "operator").post("/artifacts", content=LOG).status_code == 201
    assert server.as_("anyone", "planner").get("/artifacts").json()["artifacts"] != []


def test_an_upload_over_the_limit_is_413_in_the_contracts_shape_and_stores_nothing(server: RunningServer) -> None:
    server.app.settings = dataclasses.replace(server.app.settings, artifact_max_bytes=2 << 20)
    specialist = server.as_("spec", "specialist")
    limit = server.app.artifacts.max_bytes
    assert limit == 2 << 20
    announced = specialist.post("/artifacts", content=b"x" * (limit + 1))
    assert (announced.status_code, announced.json()["reason"]) == (413, "invalid")

    def endless() -> Iterator[bytes]:
        for _ in range(limit // (1 << 20) + 8):
            yield b"\0" * (1 << 20)

    streamed = specialist.post("/artifacts", content=endless())
    assert streamed.status_code == 413
    assert (streamed.json()["ok"], streamed.json()["reason"], streamed.json()["field"]) == (False, "invalid", "$")
    assert specialist.get("/artifacts").json()["artifacts"] == []


def alter_stored_bytes(server: RunningServer, aid: str, altered: bytes) -> None:
    """Change the artifact's bytes where the store keeps them, as someone with write access to it could."""
    url = server.app.database_url
    if url.startswith("sqlite:///"):
        digest = aid.removeprefix("sha256:")
        [blob] = (Path(url.removeprefix("sqlite:///")).parent / "artifacts").glob(f"*/{digest[:2]}/{digest}")
        blob.write_bytes(altered)
        return
    import psycopg

    schema = url.split("schema=")[1]
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{schema}".caseboard_artifact_blocks SET data = %s WHERE seq = 0 AND blob = '
            f'(SELECT blob FROM "{schema}".caseboard_artifacts WHERE artifact_id = %s)',
            (altered, aid),
        )


def test_bytes_altered_in_the_store_are_refused_when_served(server: RunningServer) -> None:
    """Issue 34, item 8: the whole artifact and its excerpts are served only while the bytes hash to the id."""
    specialist = server.as_("log-specialist", "specialist")
    aid = specialist.post("/artifacts", content=LOG).json()["artifact_id"]
    assert specialist.get(f"/artifacts/{aid}").content == LOG
    alter_stored_bytes(server, aid, LOG.replace(b"auth_failure", b"auth_success", 1))
    for path, params in ((f"/artifacts/{aid}", {}), (f"/artifacts/{aid}/excerpt", {"lines": "1-1"})):
        answer = specialist.get(path, params=params)
        assert answer.status_code == 409, (path, answer.text)
        assert (answer.json()["reason"], answer.json()["field"]) == ("tampered", "artifact_id")
        assert "auth_success" not in answer.text
    assert specialist.get(f"/artifacts/{aid}/excerpt", params={"bytes": "0-4"}).status_code == 409
