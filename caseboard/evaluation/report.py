"""The report of an evaluation: a table per arm and per incident, plots (PNG, matplotlib), and its limits.

``report.html`` is self-contained apart from ``report.png`` beside it; every figure in it comes from
``evaluation.json``. The limits are part of the result, not a footnote: they are in the JSON too.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

LIMITS = (
    "The participants are scripted stand-ins: deterministic rules, not models. Both arms apply the same "
    "judgment to each piece of evidence (caseboard/evaluation/judgment.py), so these figures measure what "
    "the coordination around that judgment changes, not how well any model investigates.",
    "A difference between the arms shows what the workspace's coordination does with the same evidence, "
    "budget and judgment: dependency tracking that flags plans whose claims changed, freshness judged at use, "
    "a verifier that is not the claim's author, flags on instruction-like text. It does not show that a "
    "model-backed workspace beats a model-backed agent; a capable agent may re-examine its own plans, and a "
    "model may be misled where the stand-ins are not.",
    "The single agent is one bounded agent with its own notes: it re-reads all of them at each step, weighs "
    "evidence with the same judgment, verifies its own claims, withdraws a plan when a check refutes its claim, "
    "and calls tools in parallel within a step. It does not track which plans depend on what, judges "
    "freshness when it reads evidence, and has no flag for instruction-like text.",
    "The corpus is generated from declared scenarios written by the project that built the workspace: its "
    "traps are the ones the workspace was designed against. Real recorded incidents may hold other failure "
    "modes, and a corpus of a few dozen incidents gives no statistical confidence; a difference of one or two "
    "runs is not a result.",
    "Time is simulated: recorded arrival delays and a fixed 30 s per participant turn; no model latency, no "
    "queueing, no broker. Tokens are estimated from the size of what each invocation reads (4 characters a "
    "token plus a fixed prompt); output tokens are not counted; cost is tokens at the configured price.",
    "Operator rework counts plans handed over as current that would have to be sent back (their claim refuted, "
    "challenged by weighed evidence, or resting on expired evidence), traps not caught and wrong outcomes; "
    "the runs' own revisions and withdrawals are reported beside it, not in it.",
)

COLUMNS = (
    ("outcome", "outcome"),
    ("correct", "matches"),
    ("time_s", "time (s)"),
    ("cycles", "cycles"),
    ("tool_calls", "tool calls"),
    ("tokens", "tokens"),
    ("cost", "cost ($)"),
)


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return html.escape("-" if value is None else str(value))


def budget_text(budget: dict[str, Any]) -> str:
    cycles = budget["cycles"] or "each incident's own limit"
    tokens = budget["tokens"] or "unlimited"
    return f"cycles {cycles}, tokens {tokens}"


def totals_table(result: dict[str, Any]) -> list[list[str]]:
    rows = [
        ["runs", *(str(result["totals"][a]["runs"]) for a in result["arms"])],
    ]
    keys = (
        ("correct", "matching the ground truth"),
        ("unsuccessful", "unsuccessful (counted in every total)"),
        ("time_to_supported_outcome_s_median", "median time to a correct outcome (s)"),
        ("time_s", "total simulated time (s)"),
        ("cycles", "cycles / steps"),
        ("tool_calls", "tool calls"),
        ("tokens", "tokens"),
        ("cost", "cost ($)"),
        ("cost_per_supported_outcome", "cost per correct outcome ($)"),
        ("traps_caught", "traps caught"),
    )
    for key, label in keys:
        rows.append([label, *(_cell(result["totals"][a][key]) for a in result["arms"])])
    for key in ("plans_requiring_revalidation", "traps_missed", "wrong_outcome", "total"):
        rows.append(
            [f"rework: {key.replace('_', ' ')}", *(str(result["totals"][a]["rework"][key]) for a in result["arms"])]
        )
    rows.append(
        [
            "revisions / withdrawals in the runs",
            *(f"{result['totals'][a]['revisions']} / {result['totals'][a]['withdrawals']}" for a in result["arms"]),
        ]
    )
    return rows


def markdown_table(result: dict[str, Any]) -> str:
    """The arms side by side, as a Markdown table (for notes and pull requests)."""
    header = "| figure | " + " | ".join(result["arms"]) + " |"
    rule = "|---|" + "---|" * len(result["arms"])
    return "\n".join([header, rule, *("| " + " | ".join(row) + " |" for row in totals_table(result))]) + "\n"


def write_png(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = result["arms"]
    totals = result["totals"]
    panels = (
        ("correct outcomes", [totals[a]["correct"] for a in arms]),
        ("traps caught", [totals[a]["traps_caught"] for a in arms]),
        ("operator rework", [totals[a]["rework"]["total"] for a in arms]),
        ("tokens (thousands)", [totals[a]["tokens"] / 1000 for a in arms]),
    )
    figure, axes = plt.subplots(1, len(panels), figsize=(12, 3.2))
    for axis, (title, values) in zip(axes, panels, strict=True):
        axis.bar(arms, values, color=["#3b6ea5", "#c07a2c"][: len(arms)])
        axis.set_title(title, fontsize=10)
        axis.tick_params(labelsize=8)
    figure.suptitle(f"{result['corpus']['incidents']} evaluation incidents, scripted stand-ins", fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(figure)


def write_report(result: dict[str, Any], out: Path) -> None:
    write_png(result, out / "report.png")
    arms = result["arms"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>caseboard evaluation</title>",
        "<style>body{font-family:sans-serif;max-width:72em;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.25em .5em;font-size:.9em}.no{background:#fbe3e3}</style></head><body>",
        f"<h1>Workspace against a single bounded agent: {result['corpus']['incidents']} evaluation incidents</h1>",
        f"<p>Participants: {html.escape(result['participants'])}. "
        f"Budget: {html.escape(budget_text(result['budget']))}. "
        f"Price: ${result['pricing']['price_per_mtok']} per million tokens.</p>",
        "<h2>What this does and does not show</h2><ul>",
        *(f"<li>{html.escape(text)}</li>" for text in result["limits"]),
        "</ul><h2>The arms</h2><table><tr><th>figure</th>",
        *(f"<th>{html.escape(a)}</th>" for a in arms),
        "</tr>",
        *("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in totals_table(result)),
        "</table><p><img src='report.png' alt='the arms compared' width='100%'></p>",
        "<h2>Per incident</h2><table><tr><th>incident</th><th>expected</th><th>arm</th>",
        *(f"<th>{label}</th>" for _, label in COLUMNS),
        "<th>rework</th><th>traps</th><th>record</th></tr>",
    ]
    for run in result["runs"]:
        expected = run["expected"] + (f" ({run['expected_explanation']})" if run["expected_explanation"] else "")
        got = run["outcome"] + (f" ({run['explanation']})" if run["explanation"] else "")
        traps = ", ".join(f"{t['kind']} {'caught' if t['caught'] else 'MISSED'}" for t in run["traps"]) or "-"
        cells = [_cell(v) for v in (run["incident"], expected, run["arm"], got)]
        cells += [_cell(run[k]) for k, _ in COLUMNS[1:]]
        cells += [_cell(run["rework"]["total"]), _cell(traps), f"<a href='{html.escape(run['record'])}'>record</a>"]
        klass = "" if run["correct"] else " class='no'"
        parts.append(f"<tr{klass}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    parts.append("</table></body></html>\n")
    (out / "report.html").write_text("".join(parts))
