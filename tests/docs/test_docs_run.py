"""Every shell and Python block of README.md and docs/*.md runs, in order, as a reader would run it (ADR 0171).

Sybil parses each page into its examples: ```sh blocks, ```python blocks and ``<!-- skip: next "reason" -->``
markers (a block that cannot run here says why beside it; a marker without a reason fails). Each page runs in
a fresh directory that looks like a checkout (the repository's files linked in, ``.venv/bin`` first on
``PATH``), so its ledger is a fresh ``.caseboard/ledger.db``; a page that names the example PostgreSQL URL gets
a fresh schema instead, every page a Redis namespace of its own, and the example addresses a reader would use
(``127.0.0.1:8000`` for ``caseboard serve``, ``127.0.0.1:8080`` for a model endpoint) become free ports of
this test's own, the model a fake OpenAI-compatible server playing incident-042.

A shell block runs in bash with ``set -eo pipefail``: every command must succeed. What it exports and the
directory it ends in carry over to the next block, and to the Python blocks' ``os.environ``. A command a
block starts in the background (``caseboard dispatch &``) must still be running when the page ends; it is
stopped then. Python blocks share one namespace per page and may ``await`` at the top level.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from collections.abc import Iterator
from pathlib import Path
from types import CodeType

import pytest
from sybil import Document, Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.conftest import ROOT
from tests.e2e.procs import Cluster, cluster, redis_available
from tests.fake_model_server import FakeModel, incident_policy

__all__ = ["cluster", "redis_available"]

PAGES = ["README.md", *sorted(str(page.relative_to(ROOT)) for page in (ROOT / "docs").glob("*.md"))]
EXAMPLE_POSTGRES = re.compile(r"postgresql://caseboard@db:5432/caseboard(\?schema=\w+)?")
LEFT_OUT = {".git", ".caseboard", ".hypothesis", ".mypy_cache", ".ruff_cache", ".pytest_cache", "mutants", "build"}
BLOCK_TIMEOUT_S = 300
SETTLE_S = 5.0
"""A process started in the background has this long after its block to fail at start (a bad setting, a busy
port) before the page's end checks that it still runs."""


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Reader:
    """One reader of one page: the directory, the environment and the processes its blocks leave running."""

    def __init__(self, home: Path, cluster: Cluster, model_url: str) -> None:
        self.home = home
        self.cwd = home
        self.state = Path(tempfile.mkdtemp(prefix="blocks-", dir=home.parent))  # scripts, outputs, exports
        self.port = free_port()
        self.postgres_url = cluster.database_url
        self.model_url = model_url
        for entry in ROOT.iterdir():
            if entry.name not in LEFT_OUT and entry.name != ".venv" and not entry.name.endswith(".egg-info"):
                (home / entry.name).symlink_to(entry)
        (home / ".venv").symlink_to(Path(sys.prefix))
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
        self.env = {
            **inherited,
            "PATH": f"{home / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "VIRTUAL_ENV": str(home / ".venv"),
            "CASEBOARD_REDIS_URL": cluster.redis_url,
            "CASEBOARD_REDIS_NAMESPACE": cluster.namespace,
        }
        self.groups: list[int] = []
        self.background: list[tuple[int, int]] = []  # (pid, line of the block that started it)
        self.settled = 0.0  # when the processes started in the background have had time to fail
        self.blocks = 0

    def adapt(self, text: str) -> str:
        """The page's example addresses, made this test's own."""
        text = EXAMPLE_POSTGRES.sub(self.postgres_url, text)
        text = text.replace("127.0.0.1:8000", f"127.0.0.1:{self.port}")
        text = text.replace("http://127.0.0.1:8080/v1", self.model_url)
        text = re.sub(r"\bcaseboard serve\b(?![^\n#]*--port)", f"caseboard serve --port {self.port}", text)
        return re.sub(r"\bmake serve\b(?![^\n#]*PORT=)", f"make serve PORT={self.port}", text)

    def shell(self, example: Example) -> str | None:
        self.blocks += 1
        number = self.blocks
        env_file, cwd_file, jobs_file = (self.state / f"{number}.{what}" for what in ("env", "cwd", "jobs"))
        script = self.state / f"{number}.sh"
        script.write_text(
            "set -eo pipefail\n"
            f"trap 'export -p > {shlex.quote(str(env_file))}; pwd > {shlex.quote(str(cwd_file))}; "
            f"jobs -p > {shlex.quote(str(jobs_file))}' EXIT\n" + self.adapt(example.parsed)
        )
        output = self.state / f"{number}.out"
        with output.open("wb") as sink:
            proc = subprocess.Popen(
                ["bash", str(script)],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.groups.append(proc.pid)
        started, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            code = proc.wait(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"the block at line {example.line} ran over {BLOCK_TIMEOUT_S} s:\n{self.tail(output)}"
        if code != 0:
            return f"the block at line {example.line} exited {code}:\n{self.tail(output)}"
        spent = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = spent.ru_utime + spent.ru_stime - cpu.ru_utime - cpu.ru_stime
        print(f"{example.path}:{example.line}: {time.monotonic() - started:.1f} s, {seconds:.1f} s of CPU")
        self.env = exported(env_file.read_text())
        self.cwd = Path(cwd_file.read_text().strip())
        started_here = [(int(pid), example.line) for pid in jobs_file.read_text().split()]
        if started_here:
            self.background += started_here
            self.settled = time.monotonic() + SETTLE_S
        return None

    def python(self, example: Example) -> None:
        os.environ.clear()
        os.environ.update(self.env)
        os.chdir(self.cwd)
        source = "\n" * (example.line) + self.adapt(example.parsed)
        code: CodeType = compile(source, example.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        if code.co_flags & inspect.CO_COROUTINE:  # the block awaits at the top level, as in asyncio's REPL
            asyncio.run(eval(code, example.namespace))
        else:
            exec(code, example.namespace)

    def still_running(self) -> list[str]:
        """What the page started in the background and has since ended (a server that could not start)."""
        time.sleep(max(0.0, self.settled - time.monotonic()))
        gone = []
        for pid, line in self.background:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            if state in ("gone", "Z", "X"):  # an orphan whose end nobody has collected yet is a zombie
                gone.append(f"the process {pid} started by the block at line {line} ended before the page did")
        return gone

    def stop(self) -> None:
        for group in self.groups:
            with_signal(group, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(group) for group in self.groups):
            time.sleep(0.1)
        for group in self.groups:
            with_signal(group, signal.SIGKILL)

    def tail(self, output: Path) -> str:
        return "\n".join(output.read_text(errors="replace").splitlines()[-60:])


def exported(declarations: str) -> dict[str, str]:
    """``export -p``'s lines back into a mapping (bash quotes each value so that it reads back as a word)."""
    env: dict[str, str] = {}
    for line in declarations.splitlines():
        found = re.match(r"declare -x ([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$", line)
        if found and found.group(2) is not None:
            [value] = shlex.split(found.group(2)) or [""]
            env[found.group(1)] = value
    return env


def alive(group: int) -> bool:
    """Whether a process of the group still runs (one that has ended but that nobody collected is a zombie)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            return True
    return False


def with_signal(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, sig)


def current_reader(example: Example) -> Reader:
    reader = example.namespace["__reader__"]
    assert isinstance(reader, Reader)
    return reader


SKIP = SkipParser()
SYBIL = Sybil(
    parsers=[
        CodeBlockParser("sh", lambda example: current_reader(example).shell(example)),
        CodeBlockParser("python", lambda example: current_reader(example).python(example)),
        SKIP,
    ],
    patterns=PAGES,
    path=str(ROOT),
)


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel(policy=incident_policy) as fake:
        yield fake


def run(document: Document, reader: Reader) -> list[str]:
    """The page's examples in order; what was skipped, with its reason."""
    document.namespace["__reader__"] = reader
    environment, here = dict(os.environ), Path.cwd()  # the Python blocks see the page's; the next test, these
    skipped = []
    try:
        for example in document.examples():
            if example.region.evaluator is SKIP.skipper:
                action, reason = example.parsed
                assert action == "end" or reason, f"line {example.line}: a skip marker says why the block cannot run"
            try:
                example.evaluate()
            except unittest.SkipTest as why:
                skipped.append(f"{example.path}:{example.line}: {why}")
        assert not (gone := reader.still_running()), "\n".join(gone)
    finally:
        reader.stop()
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environment)
    return skipped


@pytest.mark.parametrize("page", PAGES)
def test_the_page_runs_as_written(page: str, cluster: Cluster, model: FakeModel, tmp_path: Path) -> None:
    home = tmp_path / "checkout"
    home.mkdir()
    for line in run(SYBIL.parse(ROOT / page), Reader(home, cluster, model.url)):
        print("not run:", line)


def page(tmp_path: Path, text: str) -> Document:
    (tmp_path / "page.md").write_text(text)
    return Sybil(SYBIL.parsers, path=str(tmp_path), patterns=["*.md"]).parse(tmp_path / "page.md")


def test_the_harness_carries_exports_and_names_what_fails(cluster: Cluster, model: FakeModel, tmp_path: Path) -> None:
    """Exports carry to the next block and to Python; a failing command fails its block, naming its line; a
    process started in the background that has ended is named; a skip marker without a reason fails."""
    home = tmp_path / "checkout"
    home.mkdir()
    carried = page(
        tmp_path,
        "```sh\nexport GREETING=hello\n```\n\n"
        "```python\nimport os\nassert os.environ['GREETING'] == 'hello'\n```\n\n"
        '```sh\ntest "$GREETING" = hello\nfalse\necho never\n```\n',
    )
    with pytest.raises(Exception, match="line 10 exited 1"):
        run(carried, Reader(home, cluster, model.url))
    shutil.rmtree(home)
    home.mkdir()
    with pytest.raises(AssertionError, match="started by the block at line 1 ended before the page did"):
        run(page(tmp_path, "```sh\nsleep 0 &\n```\n"), Reader(home, cluster, model.url))
    shutil.rmtree(home)
    home.mkdir()
    with pytest.raises(AssertionError, match="line 1: a skip marker says why"):
        run(page(tmp_path, "<!-- skip: next -->\n```sh\ntrue\n```\n"), Reader(home, cluster, model.url))
    shutil.rmtree(home)
    home.mkdir()
    skipped = run(
        page(tmp_path, '<!-- skip: next "not here" -->\n```sh\nfalse\n```\n'), Reader(home, cluster, model.url)
    )
    assert skipped == [f"{tmp_path / 'page.md'}:2: not here"]
