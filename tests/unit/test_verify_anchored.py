"""verify with an anchor (docs/adr/0197): the lines up to the anchor are checked by their hashes and links alone,
without decoding them, and the report is the one every line's full check gives, tampered or not; the lines after
the anchor are checked in full.

"The full check" here is the one pass of ``verify_file`` as it runs without an anchor, given the anchor
(``verify._verify``): it decodes every line and checks that its bytes are the commit's own compact JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caseboard.domain.commit import Commit, SealedChain, seal
from caseboard.replay import verify
from caseboard.replay.records import file_records
from caseboard.replay.verify import verify_file
from tests.unit import test_verify_segments as segments

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "corpus" / "incident-042.jsonl"
OTHER = ROOT / "corpus" / "late-arrival-017.jsonl"


@pytest.fixture(autouse=True)
def _segments_for_small_files(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(verify, "PARALLEL_MIN_BYTES", 0)  # a small file is cut into segments too
    yield


def lines(path: Path = INCIDENT) -> list[str]:
    return path.read_text().splitlines()


def hashes(content: list[str]) -> list[str]:
    return [json.loads(line)["hash"] for line in content]


def write(folder: Path, content: list[str], name: str = "incident.jsonl") -> Path:
    path = folder / name
    path.write_text("\n".join(content) + "\n")
    return path


def full_check(path: Path, anchor: str | None) -> dict[str, object]:
    """The report of the one pass that decodes every line."""
    records = lambda: file_records(path)  # noqa: E731
    return verify._verify(records(), verify.Versions(records), str(path), anchor).to_dict()


def resealed(content: list[str], at: int, edit: dict[str, object] | None = None, layout: bool = False) -> list[str]:
    """``content`` with line ``at`` edited and every line from it sealed again: a chain intact in itself, which
    only an anchor kept from the original can tell apart. ``layout``: line ``at`` written in another layout
    (a space after a colon) before it is sealed, as caseboard never writes it."""
    out = content[:at]
    previous = json.loads(out[-1])["hash"] if out else None
    for number, line in enumerate(content[at:]):
        changes = (
            {**(edit or {}), "previous_hash": previous, "hash": None} if number == 0 else {"previous_hash": previous}
        )
        body = Commit.model_validate_json(line).model_copy(update={**changes, "hash": None}).stored_json
        if number == 0 and layout:
            body = body.replace(b'"author":', b'"author": ', 1)
        out.append(seal(body).decode())
        previous = json.loads(out[-1])["hash"]
    return out


def test_the_lines_up_to_the_anchor_are_not_decoded_and_those_after_it_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[int] = []
    decode = verify._decoded

    def counted(record: verify.RawRecord) -> Commit:
        decoded.append(record.position)
        return decode(record)

    monkeypatch.setattr(verify, "_decoded", counted)
    chain = hashes(lines())
    report = verify_file(INCIDENT, chain[-1], jobs=1)
    assert decoded == []  # the head anchored: no line decoded
    assert report.to_dict() == full_check(INCIDENT, chain[-1])
    assert (report.intact, report.commits, report.anchored_version, report.head_hash) == (True, 20, 20, chain[-1])
    decoded.clear()
    report = verify_file(INCIDENT, chain[4], jobs=1)
    assert decoded == list(range(1, 16))  # versions 6 to 20, numbered from the line after the anchor
    assert report.to_dict() == full_check(INCIDENT, chain[4])
    assert (report.intact, report.anchored_version) == (True, 5)


def test_in_segments_the_anchor_may_fall_in_any_of_them(tmp_path: Path) -> None:
    chain = hashes(lines())
    for jobs in (2, 3, 7):
        for at in (0, 6, 13, 19):
            assert verify_file(INCIDENT, chain[at], jobs=jobs).to_dict() == full_check(INCIDENT, chain[at])
    assert verify._anchored(INCIDENT, verify._segments(INCIDENT, 3), chain[19]) is not None  # the path taken


def test_a_tenant_s_chain_is_read_by_its_key(tmp_path: Path) -> None:
    """Schema 2: the tenant's id is among the first members, and the report names the workspace's key."""
    content = []
    previous = None
    for line in lines():
        commit = Commit.model_validate_json(line).model_copy(
            update={"schema_version": 2, "tenant_id": "tenant-a", "previous_hash": previous, "hash": None}
        )
        sealed = commit.sealed()
        content.append(sealed.stored_json.decode())
        previous = sealed.hash
    path = write(tmp_path, content)
    head = hashes(content)[-1]
    assert verify._anchored(path, [], head) is not None
    report = verify_file(path, head, jobs=2)
    assert report.to_dict() == full_check(path, head)
    assert (report.intact, report.workspace_id) == (True, "tenant-a/incident-042")
    chain = SealedChain.at(content[0].encode())
    assert chain is not None and (chain.key, chain.version, chain.previous) == ("tenant-a/incident-042", 1, None)


TAMPERS = (*segments.TAMPERS, "relayout", "crlf", "cut", "foreign", "space")


def tampered(tamper: str, at: int) -> list[str]:
    """``test_verify_segments``'s tamperings, and a line re-sealed in another layout with the chain after it, a
    ``\r``, the lines after ``at`` cut, another workspace's line, a space."""
    content = lines()
    if tamper == "relayout":
        return resealed(content, at, layout=True)
    if tamper == "crlf":
        content[at] += "\r"
    elif tamper == "cut":
        content = content[: at + 1]
    elif tamper == "foreign":
        other = lines(OTHER)
        content[at] = other[at % len(other)]
    elif tamper == "space":
        content[at] = content[at].replace(",", ", ", 1)
    else:
        content = segments.tampered(tamper, at)
    return content


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tamper=st.sampled_from(TAMPERS), at=st.integers(0, 18), anchored=st.integers(0, 19), jobs=st.integers(1, 4))
def test_any_single_tampering_is_reported_as_the_full_check_reports_it(
    tmp_path_factory: pytest.TempPathFactory, tamper: str, at: int, anchored: int, jobs: int
) -> None:
    """The anchor is a hash of the original chain, kept elsewhere: at its head, or earlier."""
    anchor = hashes(lines())[anchored]
    path = write(tmp_path_factory.mktemp("tampered"), tampered(tamper, at))
    report = verify_file(path, anchor, jobs=jobs).to_dict()
    assert report == full_check(path, anchor)
    assert report["intact"] is (tamper == "cut" and anchored <= at)  # lines cut after the anchor: nothing is wrong


def test_many_lines_after_the_anchor_are_checked_as_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chain = hashes(lines())
    monkeypatch.setattr(verify, "AFTER_ANCHOR_MAX_BYTES", 1)
    assert verify._anchored(INCIDENT, [], chain[4]) is None
    assert verify._anchored(INCIDENT, [], chain[19]) is not None  # nothing after the head
    assert verify_file(INCIDENT, chain[4], jobs=2).to_dict() == full_check(INCIDENT, chain[4])


def test_an_anchor_vouches_for_the_bytes_up_to_it_whoever_sealed_them(tmp_path: Path) -> None:
    """The trust an anchor carries (docs/adr/0197): a line in a layout caseboard never writes, sealed by hand with
    the chain after it, is reported by the full check; with that forged chain's own head as the anchor, it is
    not, for the anchor says these are the bytes that were sealed. An anchor kept from caseboard's chain catches
    the same file."""
    content = resealed(lines(), 19, layout=True)
    path = write(tmp_path, content)
    assert full_check(path, None)["kind"] == "altered"
    assert verify_file(path, None, jobs=1).to_dict()["kind"] == "altered"
    assert verify_file(path, hashes(content)[-1], jobs=1).intact
    kept = hashes(lines())[-1]
    assert verify_file(path, kept, jobs=1).to_dict() == full_check(path, kept)
    assert full_check(path, kept)["kind"] == "altered"
