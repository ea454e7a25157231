"""Who is calling: the API key decides the principal, the tenant and the roles; a header picks the role.

``Authorization: Bearer <token>`` names the key. A key that authenticated is remembered for
``key_cache_s`` (1 s by default) by the SHA-256 of its token, so a revocation takes effect in every
process within that time, and a busy client costs no database round trip per request. A key with one
role acts in it; a key with several must say which with ``X-Caseboard-Role``, and only a role it holds.
Nothing in a body can change any of this.

``workspace_key`` is the single place that decides which workspace a caller names: the id a route is given is
looked up in the caller's tenant only (docs/adr/0130), so one that does not exist there and one of another
tenant get the same 404, on every endpoint, and each tenant can have its own ``incident-042``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from caseboard.api.errors import ApiError, unknown_workspace
from caseboard.api.services import Services
from caseboard.domain.contribution import Author
from caseboard.domain.errors import Reason
from caseboard.domain.items import Role
from caseboard.keys import ApiKey

ROLE_HEADER = "X-Caseboard-Role"
bearer = HTTPBearer(auto_error=False, description="an API key from `caseboard keys create`")


@dataclass(frozen=True)
class Caller:
    key: ApiKey
    role: Role

    @property
    def tenant_id(self) -> str:
        return self.key.tenant_id

    @property
    def author(self) -> Author:
        return Author(principal=self.key.principal, role=self.role)


async def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


async def caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    role: Annotated[
        str | None,
        Header(alias=ROLE_HEADER, description="the role to act in; required when the key holds several"),
    ] = None,
) -> Caller:
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None:
        raise ApiError("unauthenticated", "an API key is required: Authorization: Bearer <token>", headers=challenge)
    svc: Services = request.app.state.services
    key = svc.key_cache.get(credentials.credentials)
    if key is None:
        key = await anyio.to_thread.run_sync(svc.keys.authenticate, credentials.credentials)
        if key is not None:
            svc.key_cache.put(credentials.credentials, key)
    if key is None:
        raise ApiError("unauthenticated", "the API key is unknown or revoked", headers=challenge)
    return authorize(key, role)


def authorize(key: ApiKey, role: str | None) -> Caller:
    """The caller a key acts as: its one role, or the role named in ``X-Caseboard-Role`` if it holds it."""
    if role is None:
        if len(key.roles) != 1:
            raise ApiError(
                Reason.INVALID,
                f"this key holds several roles ({', '.join(key.roles)}): name the one to act in with {ROLE_HEADER}",
                field=ROLE_HEADER,
            )
        return Caller(key, key.roles[0])
    if role not in {r.value for r in key.roles}:
        raise ApiError(Reason.FORBIDDEN, f"this key may act as {', '.join(key.roles)}, not {role!r}", field=ROLE_HEADER)
    return Caller(key, Role(role))


CallerDep = Annotated[Caller, Depends(caller)]
ServicesDep = Annotated[Services, Depends(services)]


LOCK_WAIT_S = 5.0
"""The longest a request waits for a workspace that another of this process's writers holds. Every wait
on the database under the lock is bounded (ADR 0040), so this is only reached by a server that is failing:
the request then gets 503 ``unavailable`` rather than a hang."""


def workspace_key(svc: Services, who: Caller, workspace_id: str) -> str:
    """The key of the caller's workspace ``workspace_id`` (``Workspaces.resolve``: its tenant's own, or one
    opened in its tenant before ids were scoped), or the unknown-workspace 404 when the caller's tenant has
    none, whatever other tenants have. An opened workspace's cached state answers without its lock;
    otherwise this waits for the workspace's writers of this process at most ``LOCK_WAIT_S``."""
    key = svc.app.workspaces.resolve(who.tenant_id, workspace_id, LOCK_WAIT_S)
    if key is None:
        raise unknown_workspace(workspace_id)
    return key
