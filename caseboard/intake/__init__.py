"""Alert intake: what alerting systems send, and how an alert group becomes a workspace (docs/pilot.md)."""
