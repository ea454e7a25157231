"""The coordinator: load, decide, save, in one unit of work per workspace (``Workspaces.writing``).

``submit`` decides a contribution on the cached projection and appends the resulting commit at the next
version. The store's uniqueness on (workspace, version) decides races between processes: the loser catches
up on what it missed and decides again. An unconditional writer is retried until it lands; a writer with
``expected_version`` gets ``version_conflict`` when the workspace moved. Refusals decided on a cache that
turns out to be stale are decided again on fresh state, so no caller is refused on old information.
``submit_on_loop`` commits the common case for a coroutine on an event loop, without a thread, and hands
everything else back to ``submit`` (ADR 0035).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import structlog

from caseboard.coordinator.decide import Behind, Citations, Replayed, Unresolved, decide
from caseboard.domain import items as it
from caseboard.domain.citations import CitationResolver, Cited, parse_citation
from caseboard.domain.commit import Commit
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import AmbiguousWorkspace, LedgerUnavailable, Reason, Refusal, VersionConflict
from caseboard.domain.outcome import Accepted, Refused
from caseboard.domain.workspace_key import bare, scoped, split, tenant_part
from caseboard.ledger.base import Ledger
from caseboard.projections.workspaces import Unit, Workspaces
from caseboard.reducers import tenant_of

log = structlog.get_logger("caseboard.coordinator")

MAX_ATTEMPTS = 1000
SUMMARY_LIMIT = 50
LOCK_WAIT_S = 5.0
"""The longest an opening waits for this process's other writers of the workspace of that id in the other
namespace, which it checks is not open in its tenant (``_one_per_tenant``)."""


def _opening(contribution: Contribution) -> it.Open | None:
    """The ``open`` item of a contribution that opens a workspace (it carries it alone), else None."""
    first = contribution.items[0]
    return first if isinstance(first, it.Open) else None


def _retires(contribution: Contribution) -> bool:
    return any(isinstance(item, it.Retire) for item in contribution.items)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Coordinator:
    def __init__(
        self,
        ledger: Ledger,
        workspaces: Workspaces | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
        trust_timestamps: bool = False,
        artifacts: Callable[[], CitationResolver] | None = None,
    ) -> None:
        """``artifacts``: the artifact store, opened when a contribution first cites one (docs/adr/0081)."""
        self.artifacts = artifacts
        self.ledger = ledger
        self.workspaces = workspaces or Workspaces(ledger)
        self.clock = clock
        self.trust_timestamps = trust_timestamps

    def submit(self, contribution: Contribution, key: str | None = None) -> Accepted | Refused:
        """The outcome of a contribution: accepted (with decisions) or refused (with a reason token). ``key``:
        the workspace's key (``caseboard.domain.workspace_key``) when the caller knows it, as a tenant's
        route does (``Workspaces.resolve``); else it is found from the contribution (``key_of``)."""
        try:
            outcome = self._submit(contribution, key)
        except Refusal as refusal:
            log.info(
                "contribution_refused",
                workspace_id=contribution.workspace_id,
                author=contribution.author.principal,
                role=contribution.author.role.value,
                item_types=[item.type for item in contribution.items],
                reason=refusal.reason.value,
                field=refusal.field,
            )
            return refusal.outcome()
        return outcome

    @property
    def submits_on_loop(self) -> bool:
        """``submit_on_loop`` can commit without a thread (the ledger is PostgreSQL)."""
        return self.ledger.appends_on_loop

    async def submit_on_loop(self, contribution: Contribution, key: str | None = None) -> Accepted | Refused | None:
        """The common case of ``submit``, for a coroutine on the running event loop, with no thread and no
        wait but the append's own and its turn after the loop's other writers of the workspace (ADR 0035).
        None when the contribution needs more than that: the cached state is missing or other processes are
        racing for the workspace, a thread of this process holds it, a snapshot is due, the contribution is
        refused, or its version was taken. The caller then calls ``submit`` from a thread, which decides it
        again from the start; nothing was appended. ``key``: as for ``submit``; without it, the bare id's
        workspace when it is cached (an operator's, ADR 0130), else None."""
        key = contribution.workspace_id if key is None else key  # else a thread finds it (``key_of``)
        if bare(key) != contribution.workspace_id or _opening(contribution) is not None or _retires(contribution):
            return None
        if not self.workspaces.knows_record(key):
            return None  # a thread asks the ledger once whether it is an imported record (ADR 0158)
        async with self.workspaces.writing_on_loop(key) as unit:
            if unit is None:
                return None
            try:
                at = self._at(contribution)
                state = unit.state
                record = self.workspaces.is_record(key, state)
                result = decide(
                    state, contribution, at, self.workspaces.reducer, tenant_id=tenant_part(key), record=record
                )
            except (Behind, Refusal):
                return None  # decided again in the thread, which catches up and logs the refusal
            if isinstance(result, Replayed):
                return result.outcome
            return self._landed(result, attempts=1) if await unit.save_on_loop(result) else None

    def _at(self, contribution: Contribution) -> datetime:
        return contribution.at if self.trust_timestamps and contribution.at is not None else self.clock()

    def _landed(self, result: Commit, attempts: int) -> Accepted:
        log.info(
            "commit_recorded",
            workspace_id=result.key,
            workspace_version=result.version,
            author=result.author.principal,
            role=result.author.role.value,
            item_types=[item.type for item in result.items],
            attempts=attempts,
        )
        held = [index for index, decision in enumerate(result.decisions) if "held" in decision]
        if held:  # landed without them: a person is asked to make room (ADR 0168)
            log.warning(
                "contribution_items_held",
                workspace_id=result.key,
                workspace_version=result.version,
                author=result.author.principal,
                held=[f"items[{index}] {result.items[index].type}" for index in held],
            )
        return result.outcome()

    def key_of(self, contribution: Contribution, key: str | None = None) -> str:
        """The key of the workspace a contribution is for (``caseboard.domain.workspace_key``). ``key`` when
        the caller gives it, as a tenant's route does (``<tenant>/<id>``, or the bare id of a workspace of
        the operator's namespace): it must name the contribution's workspace id, and an opening in a tenant's
        namespace must be in its scope's tenant. Without it, an opening opens in the operator's namespace,
        under the bare id, as the command line always has; anything else goes to the workspace an operator
        means by that id (``Workspaces.locate``). A ``Refusal`` when they disagree or the id is ambiguous."""
        workspace_id = contribution.workspace_id
        opening = _opening(contribution)
        if key is not None:
            tenant, named = split(key)
            if named != workspace_id:
                raise Refusal(
                    Reason.INVALID,
                    f"workspace_id {workspace_id!r} is not the workspace {named!r} it was sent to",
                    field="workspace_id",
                )
            if opening is not None and tenant is not None and tenant != opening.scope.tenant_id:
                raise Refusal(
                    Reason.FORBIDDEN,
                    f"scope.tenant_id: a workspace of tenant {tenant!r} is opened in that tenant",
                    field="items[0].scope.tenant_id",
                )
            return key
        if opening is not None:
            return workspace_id
        try:
            return self.workspaces.locate(workspace_id)
        except AmbiguousWorkspace as ambiguous:
            raise Refusal(Reason.INVALID, str(ambiguous), field="workspace_id") from None

    def _submit(self, contribution: Contribution, key: str | None) -> Accepted:
        """Load, decide, save: until the commit lands, or the contribution is refused on fresh state."""
        key = self.key_of(contribution, key)
        opening = _opening(contribution)
        if opening is not None:
            self._one_per_tenant(key, opening)
        citations: Citations | None = None  # resolved once, when first met
        with self.workspaces.writing(key) as unit:
            if _retires(contribution) and contribution.author.role in it.ROLES["retire"]:  # else forbidden, below
                self._entries_promoted(tenant_of(unit.state), contribution)
            for _ in range(MAX_ATTEMPTS):
                result, citations = self._decide(unit, contribution, citations)
                if isinstance(result, Replayed):
                    return result.outcome
                if unit.save(result):
                    if opening is not None:
                        self.workspaces.opened_here(key)
                    return self._landed(result, attempts=unit.saves)
        raise LedgerUnavailable(f"{key}: gave up after {MAX_ATTEMPTS} attempts under contention")

    def _entries_promoted(self, tenant_id: str | None, contribution: Contribution) -> None:
        """Refuse a ``retire`` of an entry no promotion in the tenant's ledger wrote (``unknown_reference``): its
        id, ``<workspace>:<version>:<index>``, must name a ``promote`` item of one of the tenant's workspaces. A
        promotion once committed stays, so this is decided once, from the ledger, not from the store."""
        for index, item in enumerate(contribution.items):
            if isinstance(item, it.Retire) and not (tenant_id and self._promoted(tenant_id, item.entry)):
                path = f"items[{index}].entry"
                raise Refusal(
                    Reason.UNKNOWN_REFERENCE,
                    f"{path}: no knowledge entry {item.entry!r} in this tenant (an entry's id is "
                    "<workspace>:<version>:<item index> of its promotion; caseboard knowledge search lists them)",
                    field=path,
                )

    def _promoted(self, tenant_id: str, entry: str) -> bool:
        workspace_id, version, index = entry.rsplit(":", 2)
        for key in (scoped(tenant_id, workspace_id), workspace_id):
            found = self.ledger.read(key, int(version) - 1, int(version))
            items = found[0].items if found else ()
            if int(index) < len(items) and isinstance(items[int(index)], it.Promote):
                opened = self.ledger.read(key, 0, 1)[0].items[0]
                return isinstance(opened, it.Open) and opened.scope.tenant_id == tenant_id
        return False

    def _one_per_tenant(self, key: str, opening: it.Open) -> None:
        """Refuse an opening when the tenant already has a workspace of that id in the other namespace: a
        tenant's id names one workspace (``Workspaces.resolve``)."""
        tenant = opening.scope.tenant_id
        workspace_id = bare(key)
        other = workspace_id if tenant_part(key) is not None else scoped(tenant, workspace_id)
        if self.workspaces.tenant_of(other, LOCK_WAIT_S) == tenant:
            raise Refusal(
                Reason.WORKSPACE_EXISTS,
                f"workspace {workspace_id!r} is already open in tenant {tenant!r}; choose another workspace id",
                field="items[0]",
            )

    def _decide(
        self, unit: Unit, contribution: Contribution, citations: Citations | None
    ) -> tuple[Commit | Replayed, Citations | None]:
        """The commit of a contribution on the unit's state, caught up as often as the decision needs it (a
        refusal is only ever decided on fresh state), and the citations it needed resolved."""
        while True:
            state = unit.state
            try:
                at = self._at(contribution)
                tenant_id = tenant_part(unit.workspace_id)
                record = self.workspaces.is_record(unit.workspace_id, state)
                decided = decide(state, contribution, at, self.workspaces.reducer, citations, tenant_id, record)
                return decided, citations
            except Unresolved:
                tenant = tenant_of(state)
                if citations is not None or self.artifacts is None or tenant is None:
                    raise
                citations = self._resolve(tenant, contribution)
            except Behind as behind:
                unit.catch_up()
                raise self._conflict(unit, behind.expected) from None
            except Refusal:
                if not unit.catch_up():
                    raise

    def _resolve(self, tenant_id: str, contribution: Contribution) -> Citations:
        """What the artifact store holds for every citation of the contribution, in the workspace's tenant.
        Only a contribution that cites comes here; each excerpt read is at most ``MAX_EXCERPT_BYTES``."""
        assert self.artifacts is not None
        wanted: dict[str, Cited] = {}
        for item in contribution.items:
            body = item.observation if isinstance(item, it.WorkResult) else item
            if isinstance(body, it.ObservationBody):
                ref = body.evidence_ref
                cited = parse_citation(ref)
                if cited is not None and ref is not None:
                    wanted.setdefault(ref, cited)
        facts = self.artifacts().resolve_all(tenant_id, list(wanted.values()))
        return dict(zip(wanted, facts, strict=True))

    def _conflict(self, unit: Unit, expected: int) -> VersionConflict:
        current = unit.state.version
        since = self.ledger.read(unit.workspace_id, after=max(expected, current - SUMMARY_LIMIT), upto=current)
        return VersionConflict(expected, current, [commit.summary() for commit in since])
