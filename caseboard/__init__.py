"""caseboard: an event-sourced backend for incident investigations by agents and people together."""
