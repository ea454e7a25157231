"""The TLS source against local servers presenting chains this test made: which instances differ."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from caseboard.pilot.servers import free_port, make_chain, tls_server
from caseboard.sources.config import SourceConfig
from tests.sources.board import embedded, excerpt, request_and_answer, specialist, whole


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[list[str], list[list[bytes]], dict[str, str]]]:
    """Three instances: two present the old chain, the third the new one; their leaves' SHA-256 by target."""
    old, new = make_chain("Old Root CA"), make_chain("New Root CA")
    with ExitStack() as stack:
        started = [stack.enter_context(tls_server(*chain)) for chain in (old, old, new)]
        targets = [target for target, _ in started]
        leaves = {t: c[0][0].fingerprint(hashes.SHA256()).hex() for t, c in zip(targets, (old, old, new), strict=True)}
        yield targets, [received for _, received in started], leaves


def config(**options: object) -> SourceConfig:
    return SourceConfig.model_validate({"type": "tls", "options": options})


def test_each_target_s_chain_is_recorded_and_cited_and_the_difference_is_an_observation(
    servers: tuple[list[str], list[list[bytes]], dict[str, str]], tmp_path: Path
) -> None:
    targets, received, leaves = servers
    down = f"127.0.0.1:{free_port()}"
    with embedded(tmp_path) as app:
        who = specialist(app, "tls", config())
        before = [len(r) for r in received]
        items = request_and_answer(app, who, "certificate-check-006", "certificate_check", " ".join([*targets, down]))[
            -1
        ].items
        result = items[0]
        query = result.query
        assert result.status == "completed"
        assert query.operation == "chain" and query.targets == (*targets, down) and query.answered == tuple(targets)
        assert query.completed is False and query.incomplete == (f"missing_target: {down}",)
        pem = whole(app, query.response).decode()
        assert f"# target {down}: no handshake" in pem
        summary = result.observation
        assert summary.statement.startswith("3 targets present 2 different chains")
        by_target = {o.source.instance: o for o in items[1:]}
        assert set(by_target) == set(targets)
        for target, observation in by_target.items():
            cited = excerpt(app, observation.evidence_ref).decode()
            assert cited.startswith(f"# target {target}: 3 certificate(s)")
            presented = x509.load_pem_x509_certificates(cited.split("\n", 1)[1].encode())
            assert presented[0].fingerprint(hashes.SHA256()).hex() == leaves[target]
            assert f"sha256 {leaves[target]}" in observation.statement
            assert "issuer CN=" in observation.statement and "valid " in observation.statement
            assert observation.event_time_quality == "unverified"  # the clock is not declared trusted
        assert "CN=Old Root CA intermediate" in by_target[targets[0]].statement
        assert "CN=New Root CA intermediate" in by_target[targets[2]].statement
    # read only: each server saw a handshake and then nothing at all
    assert [r[n:] for r, n in zip(received, before, strict=True)] == [[b""], [b""], [b""]]


def test_a_target_outside_the_allowed_list_is_never_contacted(
    servers: tuple[list[str], list[list[bytes]], dict[str, str]], tmp_path: Path
) -> None:
    targets, received, _ = servers
    with embedded(tmp_path) as app:
        who = specialist(app, "tls", config(allowed=[targets[0]]))
        before = [len(r) for r in received]
        result = request_and_answer(app, who, "c-1", "certificate_check", f"{targets[0]},{targets[1]}")[-1].items[0]
    assert result.status == "failed" and f"targets outside the allowed list: {targets[1]}" in result.summary
    assert [len(r) for r in received] == before
