"""Model-backed participants: a participant that calls a model and records every call as a ``judgment``.

    prompts.py      the per-role prompts, versioned files in ``prompts/`` (``planner.v1.txt``, ...)
    model.py        the model seam: ``ModelClient`` and ``OpenAIModel`` (any OpenAI-compatible endpoint),
                    with its timeout, retries with backoff and the usage and latency of each call
    budget.py       a workspace's budget of calls and tokens, charged per investigation cycle, from the ledger
    board.py        what a participant reads and writes: the bounded model-facing view, submissions, prompts
                    kept in the artifact store by their SHA-256
    participant.py  ``ModelParticipant``: view -> prompt -> model -> reply -> typed items and their judgment
    turn.py         one notification to completion: submit at the version shown, re-decide on a conflict,
                    record a refused or superseded reply's judgment alone
    host.py         ``caseboard agent``: the consumers of one role's queues
    audit.py        the judgments of a workspace, for ``caseboard judgments`` and ``GET .../judgments``
    plugin.py       the ``model`` entry point of ``caseboard.participants``

docs/participants.md and docs/adr/0110-0114 say why each part is as it is.
"""
