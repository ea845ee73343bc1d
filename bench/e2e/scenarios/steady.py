"""steady: lateness of a steady 1,000 jobs/s against the broker alone, in alternating rounds."""

from ..settings import COMPARE_COMMIT, COMPARE_HG, LATENESS, SIZES, args, say
from ..figures import median_round
from ..measure import Measure
from ..process import Hourglass, RUNNING, run_driver
from ..results import hourglass_view, record

def steady():
    z = SIZES["steady"]
    n = args.rounds
    say(f"\n== steady precision: {z['rate']} jobs/s for {z['duration']} s, due {z['min_delay']/1000:g}-{z['max_delay']/1000:g} s ahead, "
        f"horizon {z['horizon']}" + (f"; {n} alternating rounds, medians reported" if n > 1 else ""))
    common = ["--pattern", "steady", "--scenario", "steady", "--rate", str(z["rate"]), "--duration", str(z["duration"]),
              "--min-delay", str(z["min_delay"]), "--max-delay", str(z["max_delay"]), "--drain", str(z["drain"])]
    name = "steady" if n == 1 else "steady-round"

    def hourglass_round(k, mode, binary):
        label = "steady" + ("" if n == 1 else str(k)) + ("before" if mode == "before" else "")
        hg = Hourglass(label, z["horizon"], binary=binary).start(); RUNNING.append(hg)
        m = Measure(hg).start()
        r = run_driver([LATENESS, "--mode", "hourglass", "--prefix", hg.prefix, *common], f"steady {mode}")
        r["cost"] = m.stop(r["jobs"])
        r["hourglass_view"] = hourglass_view(hg.schema)
        r["handover"] = hg.handover_lateness()
        r["hourglass_exit"] = hg.stop()
        r["horizon"] = z["horizon"]
        r["round"] = k
        if mode == "before":
            r["compared_commit"] = COMPARE_COMMIT
        return record(name, mode, r)

    def baseline_round(k):
        m = Measure().start()
        b = run_driver([LATENESS, "--mode", "baseline", "--baseline-ttl", str(z["baseline_ttl"]), *common], "steady baseline")
        b["cost"] = m.stop(b["jobs"])
        b["round"] = k
        return record(name, "baseline", b)

    # With --compare, this build and the other alternate: each round in the other order.
    builds = [("hourglass", None)] + ([("before", COMPARE_HG)] if COMPARE_HG else [])
    rounds = {mode: [] for mode, _ in builds}
    rounds["baseline"] = []
    for k in range(1, n + 1):
        for mode, binary in (builds if k % 2 else builds[::-1]):
            rounds[mode].append(hourglass_round(k, mode, binary))
        rounds["baseline"].append(baseline_round(k))
    if n > 1:
        for mode, rs in rounds.items():
            record("steady", mode, median_round(rs))
