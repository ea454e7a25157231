"""Recorded scenarios shipped with caseboard (a copy of shared/scenarios, checked by a test)."""
