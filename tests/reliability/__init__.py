"""Fault injection through the real CLI: provider faults, signals, hostile input, broken pipes, full disks."""
