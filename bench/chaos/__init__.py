"""The fault campaign: several hourglass instances under a steady load, hotspots and cron while
faults are injected at random; then the invariants of each job once (docs/guarantees.md)."""
