"""Pure helpers over measured figures: medians of rounds, formatting, statement names. No I/O;
tested in bench/e2e/tests."""

import re

def statement_name(query):
    q = query.strip()
    for pattern, name in ((r"^WITH claimer AS", "claim_due"), (r"^INSERT INTO jobs", "insert_jobs"),
                          (r"^UPDATE jobs j SET runs", "record_handed_over"),
                          (r"^UPDATE jobs j SET released_at", "record_releases"),
                          (r"^SELECT id, floor", "due_of_ids"), (r"^SELECT pending", "stats"),
                          (r"^SET LOCAL", "set_local"), (r"^BEGIN", "begin"), (r"^COMMIT", "commit")):
        if re.search(pattern, q, re.I):
            return name
    return q[:40]

def median_round(rounds, by="lateness_p99_ms", medians=("lateness_p50_ms", "lateness_p99_ms", "lateness_max_ms"),
                 sums=("jobs", "lost", "early", "duplicates"), least=()):
    """One record for several rounds of a scenario: the median of each figure in `medians`, the
    sum of the counts in `sums`, the smallest of `least`, the per-round figures, and the rest
    (cost, hand-over) from the round with the median of `by`. A figure no round has is left
    out."""
    ordered = sorted(rounds, key=lambda r: r.get(by) or 0)
    out = dict(ordered[len(ordered) // 2])
    for key in medians:
        if all(r.get(key) is None for r in rounds):
            continue
        values = sorted(r.get(key) or 0 for r in rounds)
        out[key] = values[len(values) // 2]
        out[key + "_rounds"] = [r.get(key) for r in rounds]
    for key in sums:
        out[key] = sum(r[key] for r in rounds)
    for key in least:
        out[key] = min(r[key] for r in rounds)
    out["rounds"] = len(rounds)
    return out

def retention_ms(text):
    units = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000}
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)", text)
    return int(m.group(1)) * units[m.group(2)] if m else 0

def fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return f"{v:,}{unit}"
    if abs(v) >= 1000:
        return f"{v:,.0f}{unit}"
    if abs(v) >= 100:
        return f"{v:.0f}{unit}"
    if abs(v) >= 10:
        return f"{v:.1f}{unit}"
    return f"{v:.2f}{unit}"


# The sweep's knee (scenarios/sweep.py): the highest due rate a system keeps within this p99.
KNEE_P99_MS = 50.0


def within_knee(rounds):
    """Every round of one rate had a p99 within KNEE_P99_MS and lost nothing."""
    return bool(rounds) and all(r.get("lateness_p99_ms") is not None and r["lateness_p99_ms"] <= KNEE_P99_MS
                                and not r.get("lost") for r in rounds)


def knee_of(rates):
    """Of {rate: rounds}, the highest rate within the knee below the first that missed it (a
    rate passed after a miss is luck, not capacity); None if the lowest missed."""
    knee = None
    for rate in sorted(rates):
        if not within_knee(rates[rate]):
            break
        knee = rate
    return knee


def handover_summary(buckets, since=None):
    """Upper bounds of p50 and p99 and the shares over 5 and 50 ms of a hand-over histogram
    (cumulative buckets), less the buckets `since` of an earlier reading."""
    if not buckets:
        return None
    if since:
        before = dict(since)
        buckets = [(le, n - before.get(le, 0)) for le, n in buckets]
    total = buckets[-1][1]
    if not total:
        return None
    def bound_ms(q):  # upper bound of the q-quantile: the first bucket holding it
        return next((le * 1000 for le, n in buckets if n >= q * total), None)
    return {"runs": int(total), "p50_ms_at_most": bound_ms(0.5), "p99_ms_at_most": bound_ms(0.99),
            "over_5ms_share": round(1 - dict(buckets).get(0.005, 0) / total, 4),
            "over_50ms_share": round(1 - dict(buckets).get(0.05, 0) / total, 4)}


# The claim statement's parameters for the scale scenario's EXPLAIN (src/store/sql/claim_due.sql):
# owner, due by, at most 1,000 runs, a 30 s lease, no re-send, a 64 MiB byte budget.
CLAIM_EXPLAIN_ARGS = ("'bench-explain'", "'9999-12-31T00:00:00Z'", "1000", "30000", "NULL", "67108864")


def parameter_count(sql):
    """The number of parameters a statement takes: its highest $n."""
    return max((int(n) for n in re.findall(r"\$(\d+)", sql)), default=0)
