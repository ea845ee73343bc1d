"""Plots of results files, each run as `python3 -m bench.plots.<name> RESULTS.jsonl OUT.png`."""
