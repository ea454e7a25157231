"""Handoffs: the document a person gets when a workspace needs one, signed and delivered (docs/pilot.md)."""
