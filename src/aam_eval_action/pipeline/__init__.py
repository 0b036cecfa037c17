"""The steps of one run: workspace, agent session, checks, judge, case result, scheduling."""
