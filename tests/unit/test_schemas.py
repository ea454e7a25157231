"""The committed JSON Schemas are exactly what the models generate, and projections satisfy the contract."""

from __future__ import annotations

from pathlib import Path

from caseboard.coordinator import Coordinator
from caseboard.ledger import open_ledger
from caseboard.projections.contract import Projection
from caseboard.schemas import generate, render
from tests.conftest import play, scenario_lines

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def test_committed_schemas_match_the_models() -> None:
    for name, schema in generate().items():
        committed = (SCHEMAS / name).read_text(encoding="utf-8")
        assert committed == render(schema), f"schemas/{name} drifted from the models: run `make schemas`"


def test_no_stray_schema_files_are_committed() -> None:
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted(generate())


def test_every_version_of_incident_042_satisfies_the_projection_contract() -> None:
    coordinator = Coordinator(open_ledger("memory://"), trust_timestamps=True)
    play(coordinator, scenario_lines())
    for version in range(1, 21):
        Projection.model_validate(coordinator.workspaces.show("incident-042", version))
