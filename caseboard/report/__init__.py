"""What an auditor looks at: one self-contained HTML page of a recorded investigation (docs/auditor.md).

``model.build`` replays the record with ``caseboard.replay.history`` and gathers what the page shows (the
chain's verification, the timeline, the evidence graph, each version's changes and decisions, why each
status changed, the recorded judgments); ``page.render`` writes it through a jinja2 template with the
vendored cytoscape.js inlined, so the file needs no network and no server. ``caseboard report`` writes it to
a file; ``/ui/`` in ``caseboard serve`` serves the same page for a key's tenant, with a version slider.
"""
