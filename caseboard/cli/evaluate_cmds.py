"""``caseboard evaluate CORPUS --arm workspace --arm single-agent``: the pilot's gate (docs/evaluation.md)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from caseboard.app import build_app
from caseboard.domain.errors import ConfigurationError
from caseboard.domain.items import MAX_COUNT
from caseboard.evaluation.figures import Pricing
from caseboard.evaluation.incident import load_corpus
from caseboard.evaluation.report import markdown_table
from caseboard.evaluation.run import ARMS, SCRIPTED, Options, check_options, evaluate
from caseboard.logs import configure_logging
from caseboard.settings import Settings

BUDGET_KEYS = ("cycles", "tokens")


def parse_budget(text: str | None) -> dict[str, int]:
    """``cycles=N,tokens=M`` (either or both)."""
    budget: dict[str, int] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in BUDGET_KEYS or not value.strip().isdigit() or int(value) < 1:
            raise ConfigurationError(
                f"--budget {text!r}: expected cycles=N,tokens=M with positive integers (got {part.strip()!r})"
            )
        if key == "cycles" and int(value) > MAX_COUNT:  # a workspace's limits are counts (RuntimeLimits)
            raise ConfigurationError(f"--budget {text!r}: cycles is at most {MAX_COUNT:,} (got {value.strip()})")
        budget[key] = int(value)
    return budget


def register(commands: Any) -> None:
    evaluate_parser = commands.add_parser(
        "evaluate", help="run evaluation incidents through the workspace and a single bounded agent; report"
    )
    evaluate_parser.add_argument("corpus", help="an evaluation corpus directory (corpus/evaluation)")
    evaluate_parser.add_argument(
        "--arm", action="append", choices=ARMS, default=[], help="an arm to run (repeatable; default: both)"
    )
    evaluate_parser.add_argument("--budget", help="cycles=N,tokens=M for every run (default: each incident's limits)")
    evaluate_parser.add_argument(
        "--participants",
        default=SCRIPTED,
        metavar="NAME",
        help="scripted (default), or a caseboard.participants plugin for the workspace arm's planner and verifier",
    )
    evaluate_parser.add_argument(
        "--price-per-mtok", type=float, default=Pricing().price_per_mtok, help="dollars per million tokens (default 3)"
    )
    evaluate_parser.add_argument(
        "--out", default="evaluation-report", help="where to write (default ./evaluation-report)"
    )
    evaluate_parser.add_argument(
        "--verbose", action="store_true", help="log every commit and controller decision (default: warnings only)"
    )
    evaluate_parser.set_defaults(handler=cmd_evaluate, no_app=True)


def cmd_evaluate(_: Any, args: argparse.Namespace) -> int:
    budget = parse_budget(args.budget)
    if not 0 <= args.price_per_mtok < math.inf:  # nan and inf would be written into evaluation.json, not JSON
        raise ConfigurationError(f"--price-per-mtok {args.price_per_mtok}: a price is a number, 0 or more")
    options = Options(
        arms=tuple(dict.fromkeys(args.arm)) or ARMS,
        cycles=budget.get("cycles"),
        tokens=budget.get("tokens"),
        participants=args.participants,
        pricing=Pricing(args.price_per_mtok),
    )
    check_options(options)
    settings = Settings.from_env()
    if not args.verbose:  # thousands of simulated commits: their log lines would drown the table
        configure_logging("warning", settings.log_format)
    incidents = load_corpus(Path(args.corpus))
    out = Path(args.out)
    try:  # before the runs, not after them
        (out / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigurationError(f"cannot write {out}: {error.strerror or error}") from None
    result = evaluate(incidents, options, out, lambda url: build_app(settings, database_url=url))
    sys.stdout.write(markdown_table(result))
    sys.stdout.write(
        f"\n{len(result['runs'])} runs; figures in {out / 'evaluation.json'}, report in {out / 'report.html'}\n"
    )
    return 0
