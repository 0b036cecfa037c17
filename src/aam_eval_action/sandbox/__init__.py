"""The OS sandbox around every agent session: its writes, its network, its view of other processes."""
