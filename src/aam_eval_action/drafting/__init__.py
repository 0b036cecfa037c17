"""Drafting a starter suite for skills that have no cases (`aam-eval init`)."""
