"""The ``model`` entry point of ``caseboard.participants``: the model-backed cast, configured from settings.

``caseboard worker --participant model`` runs a planner (``planner-1``), a verifier (``verifier-1``), a reporter
(``reporter-1``) and a specialist per request kind (``log-query-specialist``, ...), each calling the model at
``CASEBOARD_MODEL_URL``. ``caseboard agent`` runs one role of it in a process of its own.
"""

from __future__ import annotations

from caseboard.agent.board import Board
from caseboard.agent.budget import Budget
from caseboard.agent.model import ModelClient, model_from_settings
from caseboard.agent.participant import ModelParticipant
from caseboard.app import App, build_app
from caseboard.domain.items import Role
from caseboard.settings import Settings
from caseboard.sources.catalog import checks_by_tenant
from caseboard.workers.host import DEFAULT_KINDS
from caseboard.workers.scripted import specialist_principal

FIXED = {"planner": "planner-1", "verifier": "verifier-1", "reporter": "reporter-1"}


def cast_principals(kinds: tuple[str, ...], *more: str) -> frozenset[str]:
    """The principals caseboard's model participants act as: the cast's (``FIXED``, a specialist per kind) and
    ``more`` (those a process was told to run as). Their judgments, and only theirs, spend the model budget."""
    return frozenset((*FIXED.values(), *(specialist_principal(kind) for kind in kinds), *more))


DEFAULT_CAST = cast_principals(DEFAULT_KINDS)
"""The principals of the cast with the default request kinds: whose judgments the console counts as calls."""


def budget_from(settings: Settings, principals: frozenset[str] = frozenset()) -> Budget:
    return Budget(settings.model_calls_per_cycle, settings.model_tokens_per_cycle, principals)


def participant(
    app: App,
    model: ModelClient,
    role: Role,
    principal: str,
    kinds: tuple[str, ...] = (),
    principals: frozenset[str] = frozenset(),
) -> ModelParticipant:
    checks = checks_by_tenant(app.settings.sources_path) if role is Role.PLANNER and app.settings.sources_path else {}
    budget = budget_from(app.settings, principals)
    return ModelParticipant(principal, role, model, Board(app), budget, kinds=kinds, checks=checks)


def cast(app: App, model: ModelClient, kinds: tuple[str, ...]) -> dict[str, ModelParticipant]:
    """The model-backed cast, by the queue audience each serves."""
    ours = cast_principals(kinds)
    out = {
        audience: participant(app, model, Role(audience), principal, principals=ours)
        for audience, principal in FIXED.items()
    }
    for kind in kinds:
        principal = specialist_principal(kind)
        out[f"specialist:{kind}"] = participant(app, model, Role.SPECIALIST, principal, (kind,), ours)
    return out


def model_participants(kinds: tuple[str, ...]) -> dict[str, ModelParticipant]:
    """The entry point's factory: the cast on an app and a model of its own, both from the environment."""
    settings = Settings.from_env()
    model = model_from_settings(settings)
    return cast(build_app(settings), model, kinds)
