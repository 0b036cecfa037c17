"""`aam-eval sensitivity`: would the suite notice if the package broke? Mutants, arms, the kill matrix."""
