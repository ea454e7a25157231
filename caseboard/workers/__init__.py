"""Participants at work: runtime, controller and lease sweeper, scripted participants, consumer host."""
