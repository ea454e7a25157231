"""The layering of STYLE.md and DESIGN §2, proved on the source: ``domain`` and ``reducers`` import only the
standard library, pydantic and each other; every part of caseboard imports only the parts below it (``LAYERS``,
which follows DESIGN §2's ``domain <- reducers <- projections <- dispatcher, replay, cli, api``); nothing
outside ``caseboard/reducers`` (tests, benchmarks and scripts included) reaches into a reducer package; and
importing any caseboard module does nothing but define things."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "caseboard"
PURE = ("caseboard.domain", "caseboard.reducers")
ALLOWED_THIRD_PARTY = ("pydantic", "pydantic_core", "typing_extensions", "confusable_homoglyphs")  # data: ADR 0136


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_under(package: str) -> list[Path]:
    return sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports (at any depth of the file), relative imports resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                found.append((node.lineno, ".".join([*base, *([node.module] if node.module else [])])))
            else:
                found.append((node.lineno, str(node.module)))
    return found


def allowed(imported: str) -> bool:
    top = imported.split(".")[0]
    return (
        top in sys.stdlib_module_names
        or top in ALLOWED_THIRD_PARTY
        or any(imported == pure or imported.startswith(pure + ".") for pure in PURE)
    )


@pytest.mark.parametrize("package", PURE)
def test_the_pure_layers_import_only_the_standard_library_pydantic_and_each_other(package: str) -> None:
    files = modules_under(package)
    assert files, f"no modules found under {package}"
    violations = [
        f"{module_name(path)} imports {imported} (line {line})"
        for path in files
        for line, imported in imports_of(path)
        if not allowed(imported)
    ]
    assert violations == []


def test_the_domain_does_not_import_the_reducers() -> None:
    violations = [
        f"{module_name(path)} imports {imported} (line {line})"
        for path in modules_under("caseboard.domain")
        for line, imported in imports_of(path)
        if imported.startswith("caseboard.") and not imported.startswith("caseboard.domain")
    ]
    assert violations == []


def test_the_import_checker_would_flag_the_coordinators_imports() -> None:
    """The checker is not vacuous: on a module of an outer layer it names what a pure layer may not use."""
    found = {imported for _, imported in imports_of(PACKAGE / "coordinator" / "service.py")}
    flagged = sorted(imported for imported in found if not allowed(imported))
    assert flagged == [
        "caseboard.coordinator.decide",
        "caseboard.ledger.base",
        "caseboard.projections.workspaces",
        "structlog",
    ]
    assert not allowed("caseboard.domainx")
    assert allowed("caseboard.reducers.workspace_rules_v1.state")
    relative = {imported for _, imported in imports_of(PACKAGE / "reducers" / "workspace_rules_v1" / "__init__.py")}
    assert (
        "caseboard.reducers.workspace_rules_v1.codec" in relative or "caseboard.reducers.workspace_rules_v1" in relative
    )


IMPORT_EVERYTHING = r"""
import ast, json, os, pkgutil, socket, sqlite3, sys, threading
from pathlib import Path

root = Path(sys.argv[1])
names = sorted(m.name for m in pkgutil.walk_packages([str(root / "caseboard")], "caseboard.")
               if m.name != "caseboard.__main__")  # `python -m caseboard` runs the command line: its purpose
third_party = set()
for path in (root / "caseboard").rglob("*.py"):
    for node in ast.parse(path.read_text()).body:  # module level only: what runs at import
        if isinstance(node, ast.Import):
            third_party.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            third_party.add(node.module)
for name in sorted(n for n in third_party if not n.startswith("caseboard")):
    __import__(name)  # their own import-time behaviour is not caseboard's

seen = {"env": [], "sqlite": [], "socket": []}

def note(key):  # a read made by caseboard's own code (libraries read their own settings, e.g. pydantic)
    if "/caseboard/" in sys._getframe(2).f_code.co_filename:
        seen["env"].append(key)

class Recorder(dict):
    def __getitem__(self, key):
        note(key); return super().__getitem__(key)
    def get(self, key, default=None):
        note(key); return super().get(key, default)
    def __contains__(self, key):
        note(key); return super().__contains__(key)

os.environ = Recorder(os.environ)
real_connect = sqlite3.connect
sqlite3.connect = lambda *a, **k: seen["sqlite"].append(str(a[:1])) or real_connect(*a, **k)
real_socket_connect = socket.socket.connect
def socket_connect(self, address):
    seen["socket"].append(str(address)); return real_socket_connect(self, address)
socket.socket.connect = socket_connect
threads = threading.active_count()
import structlog
configured = structlog.is_configured()

for name in names:
    __import__(name)

print(json.dumps({"modules": names, "seen": seen, "threads": threading.active_count() - threads,
                  "structlog_configured_by_import": structlog.is_configured() and not configured,
                  "files": sorted(os.listdir("."))}))
"""


def test_importing_every_caseboard_module_reads_no_environment_and_opens_nothing(tmp_path: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "CASEBOARD_DATABASE_URL": f"sqlite:///{tmp_path}/should-not-exist.db",
        "CASEBOARD_REDIS_URL": "redis://127.0.0.1:1/0",
    }
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING, str(ROOT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout.splitlines()[-1])
    assert "caseboard.cli.main" in report["modules"]
    assert "caseboard.app" in report["modules"]
    assert report["seen"] == {"env": [], "sqlite": [], "socket": []}
    assert report["threads"] == 0
    assert report["structlog_configured_by_import"] is False
    assert report["files"] == []
    assert run.stderr == ""


def test_every_caseboard_package_is_a_regular_package_that_a_wheel_ships() -> None:
    from setuptools import find_packages  # type: ignore[import-untyped]

    directories = sorted(
        ".".join(path.parent.relative_to(ROOT).parts)
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    )
    assert sorted(set(find_packages(str(ROOT), include=["caseboard*"]))) == sorted(set(directories))


LAYERS: dict[str, set[str]] = {
    # each part of caseboard, and the parts it may import (DESIGN §2: domain <- reducers <- projections <- the
    # rest; the composition roots, app and the entry points, see everything)
    "domain": set(),
    "reducers": {"domain"},
    "database_url": {"domain"},
    "ledger": {"database_url", "domain"},
    "settings": {"database_url", "domain", "reducers", "tenant_config"},  # CASEBOARD_REDUCER: checked at start
    "tenant_config": {"domain"},
    "intake": {"domain", "tenant_config"},
    "handoff": {"dispatcher", "domain", "tenant_config"},
    "logs": set(),
    "heap": set(),  # gc.freeze once a long-running process has started (caseboard/heap.py)
    "http_limits": set(),
    "folders": {"domain"},  # a folder a command empties only if it made it (caseboard/folders.py)
    "schemas": {"domain", "projections", "handoff"},
    "projections": {"domain", "ledger", "reducers"},
    "coordinator": {"domain", "ledger", "projections", "reducers"},
    "dispatcher": {"database_url", "domain", "ledger", "projections", "reducers"},
    "replay": {"domain", "evidence", "ledger", "reducers"},
    "report": {"domain", "evidence", "ledger", "projections", "reducers", "replay"},
    "keys": {"database_url", "domain", "ledger"},
    "evidence": {"database_url", "domain", "ledger"},  # the artifact store checks connections as the ledger does
    "knowledge": {"database_url", "dispatcher", "domain", "ledger"},
    "client": {"domain"},
    "app": {
        "coordinator", "database_url", "dispatcher", "domain", "evidence", "knowledge", "ledger", "projections",
        "settings", "keys", "handoff",
    },
    "workers": {
        "app", "coordinator", "dispatcher", "domain", "ledger", "projections", "reducers", "settings", "logs",
        "handoff",
    },
    "agent": {
        "app", "coordinator", "dispatcher", "domain", "evidence", "ledger", "projections", "reducers", "settings",
        "workers", "sources",
    },
    "api": {
        "app", "coordinator", "domain", "evidence", "http_limits", "keys", "logs", "projections", "reducers",
        "replay", "settings", "mcp_server", "agent", "report", "knowledge", "intake", "heap",
    },
    "mcp_server": {"api", "app", "coordinator", "dispatcher", "domain", "keys", "logs", "projections", "reducers",
                   "replay", "settings", "knowledge"},
    "cli": {
        "api", "app", "coordinator", "database_url", "dispatcher", "domain", "evidence", "http_limits", "keys", "logs",
        "mcp_server", "projections", "reducers", "replay", "settings", "workers", "agent", "report", "evaluation",
        "knowledge", "handoff", "sources", "pilot", "heap", "folders",
    },
    "sources": {"dispatcher", "domain", "evidence", "workers"},
    "pilot": {"app", "database_url", "domain", "folders", "handoff", "intake", "keys", "settings"},
    "scenarios": set(),
    "evaluation": {"coordinator", "dispatcher", "domain", "evidence", "ledger", "projections", "replay", "workers"},
    "__main__": {"cli"},
}  # fmt: skip


def part_of(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_every_part_imports_only_the_parts_below_it() -> None:
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name == "caseboard":
            continue
        part = part_of(name)
        assert part in LAYERS, f"{name}: a new part of caseboard; say in LAYERS what it may import"
        for line, imported in imports_of(path):
            if imported.startswith("caseboard.") and part_of(imported) not in LAYERS[part] | {part}:
                violations.append(f"{name} imports {imported} (line {line})")
    assert violations == []


def reaches_into_a_reducer(imported: str) -> bool:
    """Whether an import names more than the door: ``caseboard.reducers`` (get_reducer, REDUCERS, the Reducer
    interface, the state's types) and ``caseboard.reducers.base`` are the door; a reducer package, the
    registry's module or any other module of ``caseboard/reducers`` is inside."""
    return imported.startswith("caseboard.reducers.") and imported != "caseboard.reducers.base"


OUTSIDE = [
    path
    for top in ("caseboard", "tests", "benchmarks", "scripts", "examples")
    for path in sorted((ROOT / top).rglob("*.py"))
    if not path.is_relative_to(PACKAGE / "reducers") and path != Path(__file__).resolve()
]


def test_nothing_outside_the_reducers_reaches_into_a_reducer_package() -> None:
    """Other layers, the tests, the benchmarks and the scripts use ``caseboard.reducers``'s door only."""
    assert len(OUTSIDE) > 100
    violations = [
        f"{path.relative_to(ROOT)} imports {imported} (line {line})"
        for path in OUTSIDE
        for line, imported in imports_of(path)
        if reaches_into_a_reducer(imported)
    ]
    assert violations == []


DESIGN_CHAIN = ("domain", "reducers", "projections")
"""DESIGN §2: ``domain`` (pure) <- ``reducers`` (pure) <- ``projections`` <- ``dispatcher``, ``replay``, ``cli``,
``api``; only a composition root sees everything."""
DESIGN_OUTER = ("dispatcher", "replay", "cli", "api")
COMPOSITION_ROOTS = ("app", "cli", "__main__")


def test_the_layers_table_follows_design_section_2() -> None:
    """Every layer DESIGN §2 names is a part of caseboard with an entry in ``LAYERS``, and the table allows
    no import against the direction it draws: a layer of the chain sees only the layers before it (and the
    ledger beside the domain), no layer of the chain sees an outer one, and only a composition root or an
    entry layer (agent, api, mcp_server, workers, pilot) may see the application it composes (``app``)."""
    for layer in (*DESIGN_CHAIN, *DESIGN_OUTER):
        assert (PACKAGE / layer).is_dir() and layer in LAYERS, layer
    for index, layer in enumerate(DESIGN_CHAIN):
        assert LAYERS[layer] <= {*DESIGN_CHAIN[:index], "ledger"}, layer  # the ledger sits beside the domain
    for outer in DESIGN_OUTER:  # nothing of the chain, nor the ledger under it, sees an outer layer
        assert not any(outer in LAYERS[part] for part in (*DESIGN_CHAIN, "ledger")), outer
    assert {part for part, allowed_parts in LAYERS.items() if "app" in allowed_parts} <= {
        *COMPOSITION_ROOTS,
        "agent",
        "api",
        "mcp_server",
        "workers",
        "pilot",  # the quickstart composes a whole deployment on one machine (ADR 0172)
    }


def test_the_layer_checks_would_flag_a_reach_into_a_reducer_and_an_upward_import() -> None:
    assert part_of("caseboard.reducers.workspace_rules_v1.render") == "reducers"
    assert reaches_into_a_reducer("caseboard.reducers.workspace_rules_v1.state")
    assert reaches_into_a_reducer("caseboard.reducers.registry")
    assert not reaches_into_a_reducer("caseboard.reducers") and not reaches_into_a_reducer("caseboard.reducers.base")
    assert any(path.is_relative_to(ROOT / "tests") for path in OUTSIDE)
    assert not any(path.is_relative_to(PACKAGE / "reducers") for path in OUTSIDE)
    assert "api" not in LAYERS["projections"] and "cli" not in LAYERS["dispatcher"]
    found = {imported for _, imported in imports_of(PACKAGE / "coordinator" / "decide.py")}
    assert "caseboard.reducers" in found
