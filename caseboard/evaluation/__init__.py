"""The pilot's gate: recorded incidents run through the workspace and through a single bounded agent.

``caseboard evaluate CORPUS --arm workspace --arm single-agent`` loads evaluation incidents (``incident``),
runs each arm on each in simulated time (``workspace_arm``: the coordinator, the controller's rules and the
participants; ``single_agent``: one bounded agent with its own notes), scores every run against the
incident's ground truth (``figures``) and writes the record of every run, the JSON figures and the report
(``report``). Nothing here reads the wall clock or draws a random number: two runs give the same JSON.
docs/evaluation.md describes the method and its limits.
"""
