"""The quickstart (``caseboard pilot``, ``make pilot``): the pilot loop on one machine, with the servers it
starts (``servers.py``), the demo service (``service.py``), the model twin (``twin.py``) and the handoff
receiver (``receiver.py``); ``run.py`` wires them (docs/pilot.md)."""
