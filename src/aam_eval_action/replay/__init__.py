"""Cassettes and the replay-or-live decision: agent sessions, judge calls and model traffic."""
