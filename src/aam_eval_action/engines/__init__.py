"""Agent engines: install a package the way a CLI reads it, and run the CLI headless."""
