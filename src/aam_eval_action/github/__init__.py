"""The GitHub side: action inputs, workflow commands, the PR comment, the base checkout."""
