"""Recorded sessions in formats other tools read: ATIF trajectories and OpenTelemetry traces."""
