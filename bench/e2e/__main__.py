"""Runs the scenarios asked for, then prints the table; exits 1 if a scenario failed."""

import sys
import time

from .process import RUNNING
from .report import report
from .scenarios import BY_NAME
from .settings import ALL_SCENARIOS, SCENARIOS, say


def main():
    failed = []
    took = []  # (scenario, seconds): where a run's time went
    try:
        for name in ALL_SCENARIOS:
            if name not in SCENARIOS:
                continue
            t0 = time.monotonic()
            try:
                BY_NAME[name]()
            except Exception as e:  # one scenario failing does not hide the others' figures
                failed.append(name)
                say(f"!! {name} failed: {e}")
            finally:
                for hg in RUNNING:
                    hg.stop()
                RUNNING.clear()
                took.append((name, time.monotonic() - t0))
                say(f"== {name} took {took[-1][1]:.0f} s")
        report()
        say("== time per scenario: " + ", ".join(f"{n} {t:.0f} s" for n, t in took))
    finally:
        for hg in RUNNING:
            hg.stop()
    return 1 if failed else 0


sys.exit(main())
