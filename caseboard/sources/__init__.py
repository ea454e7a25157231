"""Read-only diagnostic sources: specialists that gather evidence from the systems a team already runs.

    base.py        what a source is: declared read operations, a query, an answer, the plugin object
    config.py      the ``CASEBOARD_SOURCES`` file: per tenant, sources, endpoints, credentials by reference,
                   guardrails; validated at start
    registry.py    the entry points of ``caseboard.sources``
    record.py      what every query records: the raw response in the artifact store, the ``work_result`` and
                   its ``query`` record, observations citing exact bytes or lines
    http.py        the HTTP sources' one door: GET on declared paths, bounded in bytes and time
    specialist.py  ``caseboard specialist``: a source as a participant of one tenant
    prometheus.py, alertmanager.py, logs.py, tls.py, mcp_tools.py   the sources caseboard ships

docs/sources.md says how to configure and write one.
"""

from caseboard.sources.base import (
    Answer,
    Deadline,
    Finding,
    Operation,
    Parameters,
    Query,
    Source,
    SourceFailed,
    SourcePlugin,
)

__all__ = [
    "Answer",
    "Deadline",
    "Finding",
    "Operation",
    "Parameters",
    "Query",
    "Source",
    "SourceFailed",
    "SourcePlugin",
]
