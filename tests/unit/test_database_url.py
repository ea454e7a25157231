"""``CASEBOARD_DATABASE_URL`` is parsed in one place (``caseboard/database_url.py``), into one ``DatabaseUrl``
that every store beside the ledger takes its facts from; a bad URL is one line that never shows the password."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from caseboard.database_url import DatabaseUrl, redact
from caseboard.domain.errors import ConfigurationError
from caseboard.settings import Settings, sqlite_path

PACKAGE = Path(__file__).resolve().parents[2] / "caseboard"
PARSERS = {"urlparse", "urlsplit", "parse_qs", "parse_qsl"}
REDIS_URL_READERS = {("settings.py", "_check_redis_url"), ("dispatcher/broker.py", "where")}
"""The Redis URL is another setting; these two read it."""
QUERY_READERS = {("api/fast_path.py", "_control_characters")}
"""A request's own query string, read to name the parameter holding a refused character (ADR 0140): no URL."""
SECRET = "s3cr%2Ft:pw"
"""A percent-encoded password (``s3cr/t:pw``): neither spelling may reach a message."""


def test_a_sqlite_url_names_the_ledger_file() -> None:
    relative, absolute = DatabaseUrl.parse("sqlite:///.caseboard/ledger.db"), DatabaseUrl.parse("sqlite:////srv/l.db")
    assert (relative.kind, relative.sqlite_path, relative.schema) == ("sqlite", Path(".caseboard/ledger.db"), "public")
    assert absolute.sqlite_path == Path("/srv/l.db")
    assert relative.redacted == "sqlite:///.caseboard/ledger.db"
    with pytest.raises(ConfigurationError, match="not a PostgreSQL connection"):
        relative.conninfo  # noqa: B018


def test_a_postgresql_url_gives_every_fact_decoded_and_keeps_the_password_for_the_connection() -> None:
    url = DatabaseUrl.parse(f"postgresql://ops%40acme:{SECRET}@db.internal:6543/case%20board?schema=tenant_7")
    assert (url.kind, url.sqlite_path, url.schema) == ("postgresql", None, "tenant_7")
    assert (url.host, url.port, url.user, url.dbname) == ("db.internal", 6543, "ops@acme", "case board")
    assert url.conninfo == {
        "dbname": "case board",
        "host": "db.internal",
        "port": 6543,
        "user": "ops@acme",
        "password": "s3cr/t:pw",
    }


def test_what_a_postgresql_url_leaves_out_is_filled_in_as_the_ledger_always_did() -> None:
    url = DatabaseUrl.parse("postgresql://")
    assert (url.host, url.port, url.user, url.dbname, url.schema) == (
        "127.0.0.1",
        5432,
        "postgres",
        "postgres",
        "public",
    )
    assert url.conninfo["password"] == ""
    assert DatabaseUrl.parse("postgresql://[::1]/x").host == "::1"
    assert DatabaseUrl.parse("postgresql://%2Frun%2FPostgreSQL/x").host == "/run/PostgreSQL"  # a socket folder


def test_postgres_is_an_alias_of_postgresql() -> None:
    text = f"postgres://ops:{SECRET}@db:5432/caseboard?schema=caseboard"
    assert DatabaseUrl.parse(text) == DatabaseUrl.parse(text.replace("postgres://", "postgresql://", 1))
    assert DatabaseUrl.parse(text).kind == "postgresql"


def test_a_parsed_url_is_returned_as_it_is() -> None:
    url = DatabaseUrl.parse("postgresql://db/x")
    assert DatabaseUrl.parse(url) is url


@pytest.mark.parametrize(
    "text",
    [
        f"postgresql://ops:{SECRET}@db.internal:6543/case%20board?schema=tenant_7",
        "postgresql://ops@db/x",
        "postgresql://[::1]:5433/x",
        "sqlite:////srv/ledger.db",
    ],
)
def test_the_redacted_url_reads_back_as_the_same_database_without_its_password(text: str) -> None:
    url = DatabaseUrl.parse(text)
    assert "s3cr" not in url.redacted and "s3cr" not in repr(url)
    assert dataclasses.replace(DatabaseUrl.parse(url.redacted), password=url.password) == url


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("mysql://root:{secret}@127.0.0.1/caseboard", "is not supported"),
        ("POSTGRESQL://root:{secret}@127.0.0.1/caseboard", "is not supported"),
        ("postgresql:/root:{secret}@127.0.0.1/caseboard", "is not supported"),
        ("memory://", "is not supported"),
        ("sqlite:///", "sqlite:///path/to/ledger.db"),
        ("sqlite://ledger.db", "names no file"),
        ("postgresql://ops:{secret}@127.0.0.1:99999/test", "not a valid URL"),
        ("postgresql://ops:{secret}@127.0.0.1:0/test", "not a valid URL"),
        ("postgresql://ops:{secret}@127.0.0.1:five/test", "not a valid URL"),
        ("postgresql://ops:s3cr/t@127.0.0.1:5432/test", "not a valid URL"),
        ("postgresql://ops:{secret}@[::1/test", "not a valid URL"),
        ('postgresql://ops:{secret}@127.0.0.1/test?schema=a"b', "schema 'a\"b'"),
        ("postgresql://ops:{secret}@127.0.0.1/test?schema=Tenant", "schema 'Tenant'"),
        ("postgresql://ops:{secret}@127.0.0.1/test?schema=7days", "schema '7days'"),
        ("postgresql://ops:{secret}@127.0.0.1/test?schema=", "schema ''"),
        (f"postgresql://ops:{{secret}}@127.0.0.1/test?schema={'a' * 64}", "schema 'aaaa"),
        ("postgresql://ops:{secret}@127.0.0.1/test?schema=a&schema=b", "schema 'a&b'"),
        (
            "postgresql://ops:{secret}@127.0.0.1/test?sslmode=require",
            "not sslmode; give libpq's settings in its environment (PGSSLMODE",
        ),
    ],
)
def test_a_bad_url_is_one_clear_line_naming_the_setting_and_never_the_password(text: str, says: str) -> None:
    url = text.format(secret=SECRET)
    with pytest.raises(ConfigurationError) as raised:
        DatabaseUrl.parse(url)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("CASEBOARD_DATABASE_URL ")
    assert says in message
    assert "s3cr" not in message and "pw" not in message
    assert redact(url) in message


def test_the_settings_parse_the_url_once_and_refuse_a_bad_one_at_start() -> None:
    settings = Settings.from_env({"CASEBOARD_DATABASE_URL": "postgres://ops@db:5432/caseboard?schema=caseboard"})
    assert settings.database is settings.database
    assert (settings.database.kind, settings.database.schema) == ("postgresql", "caseboard")
    assert Settings.from_env({}).database.sqlite_path == Path(".caseboard/ledger.db")
    for bad in ("memory://", "sqlite:///", f"postgresql://ops:{SECRET}@db:5432/x?schema=A"):
        with pytest.raises(ConfigurationError, match="CASEBOARD_DATABASE_URL") as raised:
            Settings.from_env({"CASEBOARD_DATABASE_URL": bad})
        assert "s3cr" not in str(raised.value)


def test_sqlite_path_is_the_parsed_file_and_none_for_anything_else() -> None:
    assert sqlite_path("sqlite:////srv/ledger.db") == Path("/srv/ledger.db")
    assert [sqlite_path(url) for url in ("sqlite:///", "memory://", "postgresql://db/x")] == [None, None, None]


def calls_by_function(tree: ast.AST, owner: str = "<module>") -> list[tuple[str, ast.Call]]:
    """Every call in ``tree``, with the name of the innermost function it is made in."""
    found = []
    for node in ast.iter_child_nodes(tree):
        inner = node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else owner
        if isinstance(node, ast.Call):
            found.append((owner, node))
        found.extend(calls_by_function(node, inner))
    return found


def url_parsers_outside_the_door() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name == "database_url.py":
            continue
        for owner, call in calls_by_function(ast.parse(path.read_text(), name)):
            called = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
            if called in PARSERS and (name, owner) not in REDIS_URL_READERS | QUERY_READERS:
                found.append(f"{name}:{call.lineno} {owner}() calls {called}")
    return found


def test_no_module_but_database_url_parses_a_url_beyond_the_redis_one() -> None:
    assert url_parsers_outside_the_door() == []
