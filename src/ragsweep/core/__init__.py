"""The ground floor: what every layer may use (a retrieved chunk, shared errors, cache files, the
offline environment). It imports nothing of ragsweep above it."""
