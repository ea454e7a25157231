"""One error tree: every error class caseboard defines is a ``CaseboardError`` (but the ledger's three
driver-typed internals, which the docstring names), and the tree drawn in ``caseboard/domain/errors.py``'s
docstring is exactly the classes that exist, each under its real parent. Every reason token is one ``Reason``.

The classes are found in the source (every ``class`` of every module, its bases by name), not by importing:
a module that does not import yet still has its errors counted."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from caseboard.api.errors import STATUS, ApiError
from caseboard.domain import errors
from caseboard.domain.errors import CaseboardError, Reason

PACKAGE = Path(__file__).resolve().parents[2] / "caseboard"
DRIVER_TYPED = {"NoAnswer", "Unreachable", "DatabaseUnreachable"}
"""Errors of the PostgreSQL ledger that are the driver's own types on purpose (named in the docstring)."""
ROOTS = {"Exception", "BaseException"}


def classes() -> dict[str, list[str]]:
    """Every class caseboard defines, by name, with the names of its bases. A name an error class has means
    the error class (``api/models.py``'s ``Refusal`` is the HTTP body of a ``domain/errors.py`` ``Refusal``)."""
    found: dict[str, list[str]] = {}
    errors_found: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = [
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in node.bases
                    if isinstance(b, ast.Name | ast.Attribute)
                ]
                if bases and (bases[0] in ROOTS or bases[0].endswith(("Error", "Exception"))):
                    assert node.name not in errors_found, f"two error classes named {node.name}"
                    errors_found.add(node.name)
                    found[node.name] = bases
                elif node.name not in errors_found:
                    found.setdefault(node.name, bases)
    return found


def is_error(name: str, known: dict[str, list[str]]) -> bool:
    if name in ROOTS:
        return True
    if name not in known:
        return name.endswith(("Error", "Exception"))  # a library's (psycopg.OperationalError, ...)
    return any(is_error(base, known) for base in known[name])


def error_classes() -> dict[str, str]:
    """Each error class caseboard defines and its (first) base."""
    known = classes()
    return {name: bases[0] for name, bases in known.items() if bases and is_error(name, known)}


def drawn_tree() -> dict[str, str]:
    """The tree of the docstring: each class drawn and the class it is drawn under."""
    doc = errors.__doc__ or ""
    lines = [line for line in doc.splitlines() if re.match(r"^    (CaseboardError|[│ ]*[├└]── )", line)]
    parents: list[str] = []
    tree: dict[str, str] = {}
    for line in lines:
        match = re.match(r"^    ((?:[│ ]   )*)(?:[├└]── )?(\w+)", line)
        assert match, line
        depth = len(match.group(1)) // 4 + (0 if match.group(2) == "CaseboardError" else 1)
        name = match.group(2)
        del parents[depth:]
        tree[name] = parents[-1] if parents else "Exception"
        parents.append(name)
    return tree


def test_every_error_class_is_a_caseboard_error_but_the_ledgers_driver_typed_ones() -> None:
    found = error_classes()
    known = classes()

    def under_root(name: str) -> bool:
        return name == "CaseboardError" or any(under_root(base) for base in known.get(name, []))

    outside = sorted(name for name in found if not under_root(name))
    assert outside == sorted(DRIVER_TYPED)
    assert {"ApiError", "VersionTaken", "BrokerUnavailable", "Behind"} <= {n for n in found if under_root(n)}
    assert issubclass(ApiError, CaseboardError)


def test_the_docstring_tree_is_every_caseboard_error_under_its_parent() -> None:
    found = error_classes()
    expected = {name: base for name, base in found.items() if name not in DRIVER_TYPED}
    assert drawn_tree() == expected
    for name in DRIVER_TYPED:
        assert f"``{name}``" in (errors.__doc__ or "")


def test_the_tree_reader_would_see_a_class_missing_or_misplaced() -> None:
    tree = drawn_tree()
    assert tree["CaseboardError"] == "Exception"
    assert tree["VersionConflict"] == "Refusal" and tree["ArtifactNotFound"] == "ArtifactError"
    assert tree["ApiError"] == "CaseboardError"
    assert len(tree) > 20


def test_every_reason_token_in_the_source_is_a_reason() -> None:
    """A ``"reason": "<token>"`` or ``ApiError("<token>", ...)`` written in caseboard's HTTP and MCP layers names
    a member of ``Reason``; the status table covers every member."""
    tokens = {reason.value for reason in Reason}
    used: set[str] = set()
    for part in ("api", "mcp_server", "coordinator", "domain", "client.py"):
        for path in sorted((PACKAGE / part).rglob("*.py")) if not part.endswith(".py") else [PACKAGE / part]:
            text = path.read_text()
            used |= set(re.findall(r'"reason": "([a-z_]+)"', text))
            used |= set(re.findall(r'ApiError\(\s*"([a-z_]+)"', text))
            used |= set(re.findall(r'reason == "([a-z_]+)"', text))
    assert used and used <= tokens, sorted(used - tokens)
    assert set(STATUS) == tokens
    with pytest.raises(ValueError):
        ApiError("no_such_reason", "x")
