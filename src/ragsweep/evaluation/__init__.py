"""How a configuration is evaluated: the loop, the records it builds, their aggregate, the run folder."""
