"""The per-role prompts: versioned text files in the package, never edited once a judgment names them.

A prompt is the common preamble (``common.vN.txt``) and the role's own part (``<role>.vN.txt``), formatted
with the participant's principal and, for a specialist, its request kinds. The judgment records the
prompt's name (``planner.v1``) and the SHA-256 of the exact messages sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files

from caseboard.domain.errors import ConfigurationError

VERSION = "v1"
ROLES = ("planner", "specialist", "verifier", "reporter")


@dataclass(frozen=True)
class Prompt:
    name: str
    """The role's prompt and its version, as recorded in each judgment (``planner.v1``)."""
    system: str


def load_prompt(role: str, principal: str, kinds: tuple[str, ...] = (), version: str = VERSION) -> Prompt:
    """The system prompt of ``role`` at ``version`` for ``principal``."""
    if role not in ROLES:
        raise ConfigurationError(f"no prompt for role {role!r}: model-backed roles are {', '.join(ROLES)}")
    folder = files("caseboard.agent").joinpath("prompts")
    try:
        common = folder.joinpath(f"common.{version}.txt").read_text(encoding="utf-8")
        own = folder.joinpath(f"{role}.{version}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigurationError(f"no prompt {role}.{version} in caseboard/agent/prompts/") from None
    fields = {"principal": principal, "role": role, "kinds": ", ".join(kinds) or "any kind"}
    return Prompt(f"{role}.{version}", common.format(**fields) + "\n" + own.format(**fields))
