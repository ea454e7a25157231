"""Participants at work: the runtime, the controller and lease sweeper, scripted participants, the consumer host."""
