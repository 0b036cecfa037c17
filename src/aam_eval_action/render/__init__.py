"""Everything a person reads: the terminal, the text diff, the PR comment, JUnit XML."""
