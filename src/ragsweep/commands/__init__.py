"""The commands eval and sweep: options -> the evaluation loop -> a run or sweep folder."""
