"""The auditor's page as one self-contained HTML document: jinja2 (autoescaped) over ``model.Report``, with
the vendored cytoscape.js (``vendor/``, its licence beside it) and the page's own script and style inlined.
Nothing is fetched when the page is opened: no CDN, no font, no image.

Every page carries a Content-Security-Policy (``content_security_policy``) that lets run only the scripts
caseboard ships, each named by its SHA-256: a text a participant wrote is escaped where it is shown, and were
one ever shown unescaped, the browser would still not run a script or a handler it carried."""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from caseboard.report.model import Report

PACKAGE = "caseboard.report"
SCRIPTS = ("vendor/cytoscape.min.js", "static/report.js", "static/console_live.js", "static/console_list.js")
"""Every script a page inlines: the only ones its policy lets run."""


@cache
def _asset(name: str) -> str:
    return resources.files(PACKAGE).joinpath(name).read_text(encoding="utf-8")


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(PACKAGE, "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["show"] = show
    env.filters["source"] = source
    env.globals["content_security_policy"] = content_security_policy()
    return env


@cache
def content_security_policy() -> str:
    """The policy of every page, served or written to a file: nothing fetched but from the server that served
    it (the console's data and event streams, its forms), no script but ``SCRIPTS``, no plugin, no base URL."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(_asset(name).encode()).digest()).decode()}'" for name in SCRIPTS
    )
    return (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'"
    )


def source(value: Any) -> str:
    """An observation's source as ``system · instance`` (a value of any other shape as ``show`` gives it)."""
    if isinstance(value, dict) and value.keys() == {"system", "instance"}:
        return f"{value['system']} · {value['instance']}"
    return show(value)


def show(value: Any) -> str:
    """A projection value as a short text (lists joined, mappings as compact JSON, None as a dash)."""
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "[]"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return str(value)


def script_json(data: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element (no ``</script>``, no comment opener)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(report: Report, *, live: dict[str, Any] | None = None, console: dict[str, Any] | None = None) -> str:
    """The page. ``live`` (the ``/ui/`` route): the URL of this page and the versions its slider offers;
    ``console``: what the operator's console adds (its navigation, work in flight, incomplete checks, health,
    and ``events``, the stream that tells the page of each new commit)."""
    template = _environment().get_template("report.html.j2")
    if console is not None:
        console = {
            **console,
            "live_json": script_json(console["live"]),
            "live_js": _asset("static/console_live.js"),
            "css": _asset("static/console.css"),
        }
    return template.render(
        r=report,
        p=report.projection,
        live=live,
        console=console,
        graph_json=script_json(report.graph),
        cytoscape_js=_asset("vendor/cytoscape.min.js"),
        page_js=_asset("static/report.js"),
        page_css=_asset("static/report.css"),
    )


def render_console(name: str, console: dict[str, Any], data: Any, **context: Any) -> str:
    """A console page (``console_<name>.html.j2``) with its data as JSON for its script (``console_<name>.js``
    when there is one), the report's style and the console's."""
    template = _environment().get_template(f"console_{name}.html.j2")
    script = f"static/console_{name}.js"
    return template.render(
        console=console,
        first_json=script_json(data),
        list_js=_asset(script) if resources.files(PACKAGE).joinpath(script).is_file() else "",
        page_css=_asset("static/report.css"),
        console_css=_asset("static/console.css"),
        **context,
    )
