"""scripts/mutation_score.py: the sample it draws and the interval it puts beside a sampled score."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation_score.py"


def _score(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--mutants", str(folder), *args], capture_output=True, text=True, check=False
    )


@pytest.fixture()
def mutants(tmp_path: Path) -> Path:
    """Two modules' mutmut records: a large one (40 mutants, every fourth surviving) and a small one (3)."""
    big = tmp_path / "caseboard" / "coordinator" / "rules.py.meta"
    small = tmp_path / "caseboard" / "domain" / "key.py.meta"
    big.parent.mkdir(parents=True)
    small.parent.mkdir(parents=True)
    big.write_text(
        json.dumps(
            {
                "exit_code_by_key": {
                    f"caseboard.coordinator.rules.x_f__mutmut_{n}": 0 if n % 4 == 0 else 1 for n in range(1, 41)
                }
            }
        )
    )
    small.write_text(
        json.dumps({"exit_code_by_key": {f"caseboard.domain.key.x_g__mutmut_{n}": 1 for n in range(1, 4)}})
    )
    return tmp_path


def test_a_sample_takes_n_of_each_module_and_all_of_a_smaller_one_the_same_for_a_seed(mutants: Path) -> None:
    first = _score(mutants, "--sample", "10", "--seed", "7").stdout.split()
    again = _score(mutants, "--sample", "10", "--seed", "7").stdout.split()
    other = _score(mutants, "--sample", "10", "--seed", "8").stdout.split()
    assert first == again
    assert first != other
    assert sum(name.startswith("caseboard.coordinator.rules.") for name in first) == 10
    assert sorted(name for name in first if name.startswith("caseboard.domain.key.")) == [
        f"caseboard.domain.key.x_g__mutmut_{n}" for n in range(1, 4)
    ]
    assert len(set(first)) == 13


def test_names_scores_only_the_sample_with_its_wilson_interval(mutants: Path, tmp_path: Path) -> None:
    names = tmp_path / "sample.txt"
    picked = [f"caseboard.coordinator.rules.x_f__mutmut_{n}" for n in (4, 8, 1, 2, 3, 5, 6, 7, 9, 10)]
    names.write_text("\n".join(picked) + "\n")
    out = _score(mutants, "--names", str(names)).stdout
    row = next(line for line in out.splitlines() if line.startswith("caseboard/coordinator/rules.py"))
    assert row.split() == ["caseboard/coordinator/rules.py", "8", "2", "0", "80.0%", "49%-94%"]
    assert not any(line.startswith("caseboard/domain/key.py") for line in out.splitlines())


def test_the_whole_run_is_scored_without_an_interval(mutants: Path) -> None:
    out = _score(mutants).stdout
    row = next(line for line in out.splitlines() if line.startswith("caseboard/coordinator/rules.py"))
    assert row.split() == ["caseboard/coordinator/rules.py", "30", "10", "0", "75.0%"]
    assert "interval" not in out


def test_a_bad_sample_size_or_names_file_is_one_line_and_exit_2(mutants: Path) -> None:
    for args in (["--sample", "0"], ["--names", str(mutants / "missing.txt")]):
        result = _score(mutants, *args)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("mutation_score: ")
        assert "Traceback" not in result.stderr
