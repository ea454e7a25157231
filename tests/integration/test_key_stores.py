"""API keys: hashed at rest, compared in constant time, revocable; alike on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.domain.items import Role
from caseboard.keys import KeyStore, hash_secret, open_key_store


@pytest.fixture
def store(ledger_url: str) -> Iterator[KeyStore]:
    keys = open_key_store(ledger_url)
    yield keys
    keys.close()


def test_a_key_authenticates_only_with_its_exact_token_until_revoked(store: KeyStore) -> None:
    issued = store.create("planner-1", (Role.PLANNER, Role.REPORTER), "tenant-a", "laptop")
    found = store.authenticate(issued.token)
    assert found is not None
    assert (found.principal, found.roles, found.tenant_id) == (
        "planner-1",
        (Role.PLANNER, Role.REPORTER),
        "tenant-a",
    )
    assert store.authenticate(issued.token + "x") is None
    assert store.authenticate(issued.token[:-1] + ("A" if issued.token[-1] != "A" else "B")) is None
    assert store.authenticate("not-a-token") is None
    revoked = store.revoke(issued.key.key_id)
    assert revoked is not None and revoked.revoked_at is not None
    assert store.authenticate(issued.token) is None
    assert store.revoke("000000000000") is None
    assert [k.key_id for k in store.list()] == [issued.key.key_id]


def test_the_sqlite_table_holds_only_the_hash_of_a_token(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    keys = open_key_store(url)
    issued = keys.create("planner-1", (Role.PLANNER,), "tenant-a")
    keys.close()
    with sqlite3.connect(tmp_path / "ledger.db") as conn:
        rows = conn.execute("SELECT * FROM caseboard_api_keys").fetchall()
    conn.close()
    flat = json.dumps(rows)
    secret = issued.token.split("_", 2)[2]  # the part after cbk_<key id>_, which may itself hold a "_"
    assert issued.token not in flat and secret not in flat
    assert hash_secret(issued.token) in flat


@pytest.fixture
def logging_restored() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def test_the_keys_command_creates_lists_and_revokes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], logging_restored: None
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert (
        main(
            [
                "--database-url",
                url,
                "keys",
                "create",
                "--principal",
                "planner-1",
                "--role",
                "planner",
                "--role",
                "reporter",
                "--tenant",
                "tenant-a",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    created = json.loads(captured.out)
    assert created["token"].startswith("cbk_") and "shown only once" in captured.err
    assert main(["--database-url", url, "keys", "list"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [k["key_id"] for k in listed] == [created["key_id"]] and "token" not in listed[0]
    assert listed[0]["roles"] == ["planner", "reporter"]
    assert main(["--database-url", url, "keys", "revoke", created["key_id"]]) == 0
    capsys.readouterr()
    assert main(["--database-url", url, "keys", "list"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["--database-url", url, "keys", "revoke", "nope"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    keys = open_key_store(url)
    assert keys.authenticate(created["token"]) is None
    keys.close()


def test_a_bad_keys_command_is_one_line_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], logging_restored: None
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    bad_principal = ["keys", "create", "--principal", "bad principal", "--role", "planner"]
    with pytest.raises(SystemExit) as refused:
        main(["--database-url", url, *bad_principal, "--tenant", "t"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("caseboard: ") and err.count("\n") == 1
    assert "'bad principal' is not a principal" in err
    with pytest.raises(SystemExit):
        main(["keys", "create", "--principal", "p", "--role", "admin", "--tenant", "t"])
    assert "Traceback" not in capsys.readouterr().err
