"""``caseboard report`` through the real command line: exit 1 on a broken chain (the page still written, and
saying only what is true of it), observations' event-time quality labelled as such, the cited excerpts shown
(from the artifact store, an export's sidecar, or "not in this file") and each judgment's prompt and reply."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from tests.conftest import caseboard
from tests.unit.board import obs, open_item

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
LOG = b"".join(b"14:%02d auth_failure payments-api-%d\n" % (m, m % 3) for m in range(30))
PROMPT = b'[{"content":"which change came first?","role":"user"}]'
REPLY = b'{"items":[]}'


def test_a_tampered_file_fails_and_its_page_says_only_what_is_true(tmp_path: Path) -> None:
    lines = (CORPUS / "incident-042.jsonl").read_text().splitlines(keepends=True)
    assert "Authentication failures" in lines[15]
    lines[15] = lines[15].replace("Authentication failures", "Nothing unusual")
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(lines))
    out = tmp_path / "report.html"
    done = caseboard("report", str(tampered), "--out", str(out), url=f"sqlite:///{tmp_path}/none.db")
    assert done.returncode == 1, done.stderr
    assert "NOT INTACT at version 16" in done.stderr
    html = out.read_text()
    assert 'data-intact="false">NOT INTACT: this record fails verification at version 16' in html
    (title,) = re.findall(r"<h1>(.*?)</h1>", html)
    assert title == "incident-042 &mdash; version 15, of the 15 before the first bad one (version 16)"
    assert "head hash (verified)" not in html
    assert "not verified: the chain fails at version 16" in html
    intact = caseboard("report", str(CORPUS / "incident-042.jsonl"), "--out", str(out), url=f"sqlite:///{tmp_path}/n")
    assert intact.returncode == 0, intact.stderr
    assert "head hash (verified)" in out.read_text()


def test_observations_show_their_event_time_quality_as_such_and_a_file_has_no_prompts(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = caseboard("report", str(CORPUS / "incident-042.jsonl"), "--out", str(out), url=f"sqlite:///{tmp_path}/n")
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    nodes = html[html.index('id="nodes"') : html.index("</table>", html.index('id="nodes"'))]
    row = next(line for line in nodes.splitlines() if "<code>obs-certificate-change</code>" in line)
    assert ">event time verified</span>" in row
    assert ">verified</span>" not in nodes
    call = html[html.index('class="call"') :]
    assert 'class="bytes prompt" data-check="not in this file"' in call


def _workspace(tmp_path: Path, url: str) -> tuple[str, str]:
    """A workspace citing an excerpt of a stored log, and a judgment whose prompt and reply are stored."""
    for name, data in (("auth.log", LOG), ("prompt.json", PROMPT), ("reply.json", REPLY)):
        (tmp_path / name).write_bytes(data)
    put = caseboard("artifacts", "put", str(tmp_path / "auth.log"), url=url)
    assert put.returncode == 0, put.stderr
    aid = str(json.loads(put.stdout)["artifact_id"])
    for name in ("prompt.json", "reply.json"):
        assert caseboard("artifacts", "put", str(tmp_path / name), url=url).returncode == 0
    judgment = {
        "type": "judgment",
        "invocation_id": "inv-1",
        "component": "planner.v1 turn",
        "model": "m",
        "prompt_sha256": hashlib.sha256(PROMPT).hexdigest(),
        "input_workspace_version": 2,
        "output": {"reply_artifact": f"sha256:{hashlib.sha256(REPLY).hexdigest()}", "usage": {"total_tokens": 9}},
    }
    lines = [
        {"workspace_id": "ws-1", "author": {"principal": "op", "role": "operator"}, "items": [open_item()]},
        {
            "workspace_id": "ws-1",
            "author": {"principal": "log-specialist", "role": "specialist"},
            "items": [obs("obs-1", evidence_ref={"artifact": aid, "lines": [5, 7]})],
        },
        {"workspace_id": "ws-1", "author": {"principal": "planner-1", "role": "planner"}, "items": [judgment]},
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    submitted = caseboard("submit", "ws-1", "--file", str(tmp_path / "in.jsonl"), url=url)
    assert submitted.returncode == 0, submitted.stderr
    return aid, b"".join(LOG.splitlines(keepends=True)[4:7]).decode()


def test_a_workspace_page_shows_the_cited_excerpt_and_the_judgments_prompt_and_reply(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    _, excerpt = _workspace(tmp_path, url)
    out = tmp_path / "report.html"
    done = caseboard("report", "ws-1", "--out", str(out), url=url)
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert '<tr class="excerpt" data-check="verified">' in html
    assert excerpt.replace("\n", "") in html.replace("\n", "")
    assert 'class="bytes prompt" data-check="verified"' in html
    assert "which change came first?" in html.replace("&#34;", '"')
    assert 'class="bytes reply" data-check="verified"' in html

    export = tmp_path / "ws-1.jsonl"
    assert caseboard("export", "ws-1", "--out", str(export), "--with-excerpts", url=url).returncode == 0
    done = caseboard("report", str(export), "--out", str(out), url=url)
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert '<tr class="excerpt" data-check="verified">' in html  # from the sidecar
    assert excerpt.replace("\n", "") in html.replace("\n", "")
    assert 'class="bytes prompt" data-check="not in this file"' in html
    sidecar = tmp_path / "ws-1.jsonl.excerpts.jsonl"
    record = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**record, "text": record["text"].replace("auth_failure", "auth_success")}) + "\n")
    altered = caseboard("report", str(export), "--out", str(out), url=url)
    assert altered.returncode == 1  # as verify: a cited excerpt that does not match fails
    assert "altered since recorded: the excerpt" in altered.stderr
    assert '<tr class="excerpt" data-check="mismatch">' in out.read_text()
    sidecar.unlink()
    assert caseboard("report", str(export), "--out", str(out), url=url).returncode == 0
    assert '<tr class="excerpt" data-check="not in this file">' in out.read_text()
