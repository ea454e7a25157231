"""The mutation score per module of the last ``mutmut run`` (``make mutants``): killed / (killed + survived),
from mutmut's own records under ``mutants/``; timeouts count as killed, mutants no selected test covers are
listed apart. ``--survivors`` lists each surviving mutant's name (``mutmut show NAME`` prints its diff);
``--explain FILE`` writes every survivor with the line it changes and its kind (``words``: only the text of a
string changed, a message's or a description's; ``log``: only a log line's fields; ``logic``: anything else).

A full run of every module does not fit the time a run has on two cores (the rules' and the reducers'
survivors run most of the selection, 30-60 s each), so ``--sample N`` prints the names of a random sample of N
mutants of each module (all of a smaller one; ``--seed`` makes it the same sample again) for ``mutmut run
NAME ...`` (``make mutants-sample``), and ``--names FILE`` scores only the mutants FILE names, with a 95 %
Wilson interval beside each module's score: what the score of the whole module is likely to be."""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import io
import json
import math
import random
import sys
import tokenize
from collections import Counter
from pathlib import Path

KILLED = {1, 3, 24, 36, -24, 152, 255, 37}  # test failure, pytest error, timeouts, caught by the type check
SURVIVED = {0}
NO_TESTS = {5, 33}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", default="mutants", help="mutmut's folder (default: ./mutants)")
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    parser.add_argument("--explain", metavar="FILE", help="write each survivor's changed line and kind to FILE")
    parser.add_argument("--sample", type=int, metavar="N", help="print N mutant names of each module, at random")
    parser.add_argument("--seed", type=int, default=1, help="the sample's seed (default: 1)")
    parser.add_argument("--names", metavar="FILE", help="score only the mutants FILE names (one a line)")
    args = parser.parse_args()
    folder = Path(args.mutants)
    metas = sorted(folder.rglob("*.py.meta"))
    if not metas:
        sys.stderr.write(f"mutation_score: no mutmut results under {folder}: run `make mutants` first\n")
        return 2
    if args.sample is not None:
        if args.sample < 1:
            sys.stderr.write("mutation_score: --sample takes a number of mutants of at least 1\n")
            return 2
        print("\n".join(sample(metas, args.sample, args.seed)))
        return 0
    wanted: set[str] | None = None
    if args.names:
        try:
            wanted = set(Path(args.names).read_text().split())
        except OSError as error:
            sys.stderr.write(f"mutation_score: cannot read {args.names}: {error.strerror}\n")
            return 2
    rows, survivors = [], []
    totals: Counter[str] = Counter()
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if wanted is not None:
            codes = {name: code for name, code in codes.items() if name in wanted}
        if not codes:
            continue
        counts = Counter(
            "killed"
            if code in KILLED
            else "survived"
            if code in SURVIVED
            else "no tests"
            if code in NO_TESTS
            else "not checked"
            if code is None
            else "other"
            for code in codes.values()
        )
        survivors += [name for name, code in codes.items() if code in SURVIVED]
        totals.update(counts)
        module = str(meta.relative_to(folder))[: -len(".meta")]
        rows.append((module, counts))
    interval = wanted is not None
    print(
        f"{'module':<52} {'killed':>7} {'survived':>9} {'no tests':>9} {'score':>7}"
        + (f" {'95 % interval':>15}" if interval else "")
    )
    for module, counts in [*rows, ("all", totals)]:
        judged = counts["killed"] + counts["survived"]
        score = f"{counts['killed'] / judged:.1%}" if judged else "-"
        print(
            f"{module:<52} {counts['killed']:>7} {counts['survived']:>9} {counts['no tests']:>9} {score:>7}"
            + (f" {wilson(counts['killed'], judged):>15}" if interval else "")
        )
    if totals["not checked"] or totals["other"]:
        print(f"not checked: {totals['not checked']}, other outcomes: {totals['other']}")
    if args.survivors:
        print("\n".join(["", "survivors:", *survivors]))
    if args.explain:
        explained = [explain(folder, name) for name in survivors]
        kinds = Counter(kind for kind, _, _ in explained)
        lines = [f"survivors by kind: {', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}", ""]
        lines += [
            f"{name}\t{kind}\t{before}\t=>\t{after}"
            for name, (kind, before, after) in zip(survivors, explained, strict=True)
        ]
        Path(args.explain).write_text("\n".join(lines) + "\n")
        print(f"wrote {len(survivors)} survivors to {args.explain}: {dict(sorted(kinds.items()))}")
    return 0


def sample(metas: list[Path], per_module: int, seed: int) -> list[str]:
    """``per_module`` names of each module's mutants (all of a smaller one), drawn at random with ``seed``."""
    rng = random.Random(seed)
    names: list[str] = []
    for meta in metas:
        keys = sorted(json.loads(meta.read_text())["exit_code_by_key"])
        names += sorted(rng.sample(keys, min(per_module, len(keys))))
    return names


def wilson(killed: int, judged: int, z: float = 1.96) -> str:
    """The 95 % Wilson score interval of ``killed`` of ``judged``: where the module's own score likely lies."""
    if not judged:
        return "-"
    p = killed / judged
    centre = (p + z * z / (2 * judged)) / (1 + z * z / judged)
    half = z * math.sqrt(p * (1 - p) / judged + z * z / (4 * judged * judged)) / (1 + z * z / judged)
    return f"{max(0.0, centre - half):.0%}-{min(1.0, centre + half):.0%}"


def explain(folder: Path, name: str) -> tuple[str, str, str]:
    """A survivor's kind and the first line it changes (before, after), read from mutmut's generated module."""
    module, _, function = name.rpartition(".")
    path = folder / (module.replace(".", "/") + ".py")
    functions = _functions(path if path.exists() else path.with_suffix("") / "__init__.py")
    original = functions.get(function.rpartition("__mutmut_")[0] + "__mutmut_orig", [])
    mutant = functions.get(function, [])
    changed = [(a, b) for a, b in _pairs(original, mutant) if a.strip() != b.strip()]
    if not changed:
        return "logic", "", ""
    before, after = changed[0]
    if all(_only_strings_differ(a, b) for a, b in changed):
        kind = "words"
    elif all("log." in a or "log.info" in a or "log.warning" in a for a, _ in changed):
        kind = "log"
    else:
        kind = "logic"
    return kind, before.strip()[:140], after.strip()[:140]


@functools.cache
def _functions(path: Path) -> dict[str, list[str]]:
    """Every function and method of a generated module, by name: the lines of its body."""
    lines = path.read_text().splitlines()
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            found[node.name] = lines[node.body[0].lineno - 1 : node.end_lineno]
    return found


def _pairs(a: list[str], b: list[str]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            left, right = a[i1:i2] or [""], b[j1:j2] or [""]
            pairs += list(
                zip(left + [""] * (len(right) - len(left)), right + [""] * (len(left) - len(right)), strict=True)
            )
    return pairs


def _tokens(line: str) -> list[tuple[int, str]] | None:
    try:
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(line.strip()).readline)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def _only_strings_differ(a: str, b: str) -> bool:
    left, right = _tokens(a), _tokens(b)
    if left is None or right is None or len(left) != len(right):
        return False
    return all(x == y or (x[0] == y[0] == tokenize.STRING) for x, y in zip(left, right, strict=True))


if __name__ == "__main__":
    sys.exit(main())
