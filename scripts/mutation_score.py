"""The mutation score per module of the last ``mutmut run`` (``make mutants``): killed / (killed + survived),
from mutmut's own records under ``mutants/``; timeouts count as killed, mutants no selected test covers are
listed apart. ``--survivors`` lists each surviving mutant's name (``mutmut show NAME`` prints its diff);
``--explain FILE`` writes every survivor with the line it changes and its kind (``words``: only the text of a
string changed, a message's or a description's; ``log``: only a log line's fields; ``logic``: anything else)."""

from __future__ import annotations

import argparse
import ast
import difflib
import functools
import io
import json
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
    args = parser.parse_args()
    folder = Path(args.mutants)
    metas = sorted(folder.rglob("*.py.meta"))
    if not metas:
        sys.stderr.write(f"mutation_score: no mutmut results under {folder}: run `make mutants` first\n")
        return 2
    rows, survivors = [], []
    totals: Counter[str] = Counter()
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
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
    print(f"{'module':<52} {'killed':>7} {'survived':>9} {'no tests':>9} {'score':>7}")
    for module, counts in rows:
        judged = counts["killed"] + counts["survived"]
        score = f"{counts['killed'] / judged:.1%}" if judged else "-"
        print(f"{module:<52} {counts['killed']:>7} {counts['survived']:>9} {counts['no tests']:>9} {score:>7}")
    judged = totals["killed"] + totals["survived"]
    print(
        f"{'all':<52} {totals['killed']:>7} {totals['survived']:>9} {totals['no tests']:>9} "
        f"{totals['killed'] / judged:.1%}"
        if judged
        else "no mutant was judged"
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
