"""Pure reading of a campaign: which fault explains each duplicate, and the summary table."""

# Faults after which at-least-once allows a duplicate: hourglass (or its tie to a service) was
# gone between a broker confirm and the database record, or a broker connection dropped with
# publishes unconfirmed. A memory alarm or a full consumer queue explains none.
CRASH_FAULTS = {"kill9", "sigstop", "pg_immediate", "pg_terminate", "broker_close", "net_cut_pg",
                "net_cut_amqp"}


def explain(duplicate, faults, resend_after_s, horizon_s=60.0, margin_s=15.0):
    """The fault that explains a duplicate release, or None. A run handed over (at most a
    horizon before its due time) and confirmed before the fault, and recorded by nobody, is
    published again by whoever takes it over: its second copy arrives after the fault began, by
    the later of the fault's end and the run's due time, plus the takeover and a resend."""
    received = sorted(duplicate["received"])
    second = received[1]
    due = duplicate["due"]
    best = None
    for fault in faults:
        if fault["kind"] not in CRASH_FAULTS:
            continue
        latest = max(fault["end"], due) + resend_after_s + margin_s
        handed_over_from = due - horizon_s - margin_s
        if fault["start"] - 1.0 <= second <= latest and fault["start"] >= handed_over_from:
            if best is None or fault["start"] > best["start"]:
                best = fault
    return best


def summarize(result, faults, resend_after_s, parked, horizon_s=60.0):
    counts = {}
    for fault in faults:
        counts[fault["kind"]] = counts.get(fault["kind"], 0) + 1
    causes = {}
    unexplained = []
    for duplicate in result["duplicates"]:
        fault = explain(duplicate, faults, resend_after_s, horizon_s)
        if fault is None:
            unexplained.append(duplicate)
        else:
            causes[fault["kind"]] = causes.get(fault["kind"], 0) + len(duplicate["received"]) - 1
    return {
        "faults": counts,
        "faults_injected": len(faults),
        "jobs": result["accepted"],
        "releases": result["releases"],
        "lost": result["lost"],
        "early": result["early"],
        "duplicates": sum(len(d["received"]) - 1 for d in result["duplicates"]),
        "duplicates_by_cause": causes,
        "unexplained_duplicates": len(unexplained),
        "unexplained_ids": [d["id"] for d in unexplained[:20]],
        "parked": parked,
        "worst_lateness_ms": round(result["worst_lateness_ms"], 1),
    }


def ok(summary):
    return (summary["lost"] == 0 and summary["early"] == 0 and summary["parked"] == 0
            and summary["unexplained_duplicates"] == 0)


def table(summary, label):
    causes = ", ".join(f"{k} {v}" for k, v in sorted(summary["duplicates_by_cause"].items())) or "none"
    faults = ", ".join(f"{k} {v}" for k, v in sorted(summary["faults"].items()))
    lines = [
        f"   | fault campaign, {label} | |",
        "   |---|---|",
        f"   | faults injected | {summary['faults_injected']} ({faults}) |",
        f"   | faults that could not be injected | {summary.get('faults_failed', 0)} |",
        f"   | jobs accepted | {summary['jobs']:,} |",
        f"   | lost | {summary['lost']} |",
        f"   | early | {summary['early']} |",
        f"   | parked (pending past due at the end) | {summary['parked']} |",
        f"   | duplicates | {summary['duplicates']} (by cause: {causes}; unexplained {summary['unexplained_duplicates']}) |",
        f"   | worst lateness | {summary['worst_lateness_ms'] / 1000:.1f} s |",
        f"   | verdict | {'each job once' if ok(summary) else 'INVARIANT BROKEN'} |",
    ]
    return "\n".join(lines)
