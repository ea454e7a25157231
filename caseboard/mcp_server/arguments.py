"""The tools' arguments: one strict model per tool, its JSON Schema advertised, validated by caseboard itself.

The SDK would answer arguments that fail its own validation with an unstructured error text. So the tools take
their raw arguments and validate them here with ``caseboard.coordinator.parse.parse_json`` (the parser of the
HTTP API and the command line: strict JSON, bounded, field paths such as ``items[0].statement``); whatever
is wrong, the answer is a structured ``invalid`` refusal naming the field. Unknown arguments are refused too.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from caseboard.domain.contribution import MAX_ITEMS, IdempotencyKey
from caseboard.domain.items import Item, Role, WorkspaceId
from caseboard.projections.model_view import MIN_BUDGET

DEFAULT_BUDGET = 8000


class Arguments(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NoArguments(Arguments):
    pass


class ListWorkspaces(Arguments):
    after: WorkspaceId | None = Field(None, description="list workspace ids after this one (the next_after you got)")
    limit: Annotated[int, Field(ge=1, le=500, description="at most this many workspaces")] = 100


class WorkspaceArgument(Arguments):
    workspace_id: WorkspaceId = Field(description="the workspace id, e.g. incident-042")


class ReadView(WorkspaceArgument):
    budget_chars: Annotated[
        int, Field(ge=MIN_BUDGET, le=1_000_000, description="the most characters of text the view may take")
    ] = DEFAULT_BUDGET
    version: Annotated[int, Field(ge=1)] | None = Field(None, description="a past version (default: the head)")
    role: Role | None = Field(None, description="whose view (default: the role you act in)")
    as_of: AwareDatetime | None = Field(
        None, description="the time of use freshness is judged at, ISO 8601 with a zone (default: now)"
    )


class ReadWorkspace(WorkspaceArgument):
    version: Annotated[int, Field(ge=1)] | None = Field(None, description="a past version (default: the head)")
    reducer: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        None, description="a reducer version, e.g. workspace-rules-v1 (default: the current one)"
    )


class ChangesSince(WorkspaceArgument):
    after: Annotated[int, Field(ge=0, le=2**62)] = Field(
        description="the version you last saw (your expected_version after a version_conflict)"
    )
    limit: Annotated[int, Field(ge=1, le=200, description="at most this many commits")] = 50


class ListWork(WorkspaceArgument):
    pass


class Submit(WorkspaceArgument):
    items: Annotated[list[Item], Field(min_length=1, max_length=MAX_ITEMS)] = Field(
        description="the items, committed together or not at all; each has a 'type' (see each item's schema)"
    )
    expected_version: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="commit only if the workspace is still at this version (compare-and-set); on "
        "version_conflict read changes_since and decide again",
    )
    idempotency_key: IdempotencyKey | None = Field(
        None,
        description="retrying with the same key and content returns the original outcome and appends nothing",
    )
    at: AwareDatetime | None = Field(
        None, description="the commit's clock; honoured only by a server started with --trust-timestamps"
    )
