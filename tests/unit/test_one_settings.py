"""One ``Settings``, read once from the environment: production loops are handed what they need, never read it.

The trust of timestamps and the crash tests' fault hooks are settings like any other; the dispatcher and the
worker host get theirs from whoever builds them (``cli/dispatch_cmds.py``, ``workers/live.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from caseboard.dispatcher.follower import DispatchConfig
from caseboard.domain.errors import ConfigurationError
from caseboard.settings import Settings

PACKAGE = Path(__file__).resolve().parents[2] / "caseboard"
LOOPS = ("dispatcher/follower.py", "workers/host.py", "coordinator/service.py", "projections/workspaces.py")


def test_the_environment_is_read_into_settings() -> None:
    settings = Settings.from_env(
        {
            "CASEBOARD_TRUST_TIMESTAMPS": "1",
            "CASEBOARD_DISPATCH_TEST_HOOK": "pause-after-send",
            "CASEBOARD_WORKER_TEST_HOOK": "pause-after-effect:controller",
        }
    )
    assert settings.trust_timestamps is True
    assert settings.dispatch_test_hook == "pause-after-send"
    assert settings.worker_test_hook == "pause-after-effect:controller"
    plain = Settings.from_env({"CASEBOARD_TRUST_TIMESTAMPS": "0"})
    assert (plain.trust_timestamps, plain.dispatch_test_hook, plain.worker_test_hook) == (False, None, None)
    assert DispatchConfig().test_hook is None


def test_a_bad_setting_is_one_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="CASEBOARD_POOL_SIZE"):
        Settings.from_env({"CASEBOARD_POOL_SIZE": "many"})
    for value in ("true", "yes", "maybe"):  # never silently off
        with pytest.raises(ConfigurationError, match=f"CASEBOARD_TRUST_TIMESTAMPS must be 1 or 0, not '{value}'"):
            Settings.from_env({"CASEBOARD_TRUST_TIMESTAMPS": value})


@pytest.mark.parametrize("name", ["CASEBOARD_MODEL_API_KEY", "CASEBOARD_METRICS_TOKEN"])
def test_a_secret_no_http_header_can_carry_is_refused_at_start_without_quoting_it(name: str) -> None:
    """The model's key is sent in a header and the metrics token matched against one: with a line feed in it, every
    model call failed as a connection error, and no client could ever read the metrics."""
    with pytest.raises(ConfigurationError) as raised:
        Settings.from_env({name: "sk-abc\nline-2"})
    assert str(raised.value) == f"{name} holds a control character, which no HTTP header may carry"
    assert Settings.from_env({name: "sk-abc\tline-2"})  # a tab may be sent


@pytest.mark.parametrize("module", LOOPS)
def test_a_production_loop_never_reads_the_environment(module: str) -> None:
    tree = ast.parse((PACKAGE / module).read_text())
    reads = [
        f"{module}:{node.lineno} {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
    ]
    assert reads == []
