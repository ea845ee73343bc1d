// What a peer run measures, from the due time of each job and the times its handler started:
// lateness (handler start - due), early, lost and duplicated jobs, and for a hotspot (every job
// due at one instant) how long the queue took to drain. Pure: unit-tested in stats.test.mjs.

// A seeded PRNG (mulberry32): the same offsets for every peer of a run.
export function seededRandom(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Due times (epoch ms) of `jobs` jobs: `base` plus an offset uniform in [0, spreadMs); all at
// `base` when spreadMs is 0 (a hotspot).
export function dueTimes(jobs, spreadMs, base, seed = 1) {
  const random = seededRandom(seed);
  return Array.from({ length: jobs }, () => base + (spreadMs > 0 ? Math.floor(random() * spreadMs) : 0));
}

// The q-quantile of sorted values (nearest rank).
export function quantile(sorted, q) {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

const round = (value, places = 2) => (value === null ? null : Number(value.toFixed(places)));

// due: epoch ms per job index; handled: for each index, the epoch ms of each handler start.
export function summarize(due, handled) {
  const lateness = [];
  let lost = 0;
  let duplicates = 0;
  let first = Infinity;
  let last = -Infinity;
  due.forEach((dueAt, index) => {
    const times = handled[index] ?? [];
    if (times.length === 0) {
      lost += 1;
      return;
    }
    duplicates += times.length - 1;
    const start = Math.min(...times);
    lateness.push(start - dueAt);
    first = Math.min(first, start);
    last = Math.max(last, start);
  });
  lateness.sort((a, b) => a - b);
  const mean = lateness.length ? lateness.reduce((a, b) => a + b, 0) / lateness.length : null;
  const out = {
    jobs: due.length,
    handled: lateness.length,
    lost,
    duplicates,
    early: lateness.filter((ms) => ms < 0).length,
    lateness_p50_ms: round(quantile(lateness, 0.5)),
    lateness_p90_ms: round(quantile(lateness, 0.9)),
    lateness_p99_ms: round(quantile(lateness, 0.99)),
    lateness_max_ms: round(lateness.length ? lateness[lateness.length - 1] : null),
    lateness_min_ms: round(lateness.length ? lateness[0] : null),
    lateness_mean_ms: round(mean),
  };
  const instant = due.length && due.every((d) => d === due[0]) ? due[0] : null;
  if (instant !== null && lateness.length) {
    // A hotspot: from the instant to the last job handled, and the rate after the first.
    out.first_handled_after_due_ms = round(first - instant);
    out.drain_s = round((last - instant) / 1000, 3);
    out.drain_per_s = out.drain_s > 0 ? Math.round(lateness.length / out.drain_s) : null;
    out.drain_after_first_per_s = last > first ? Math.round(lateness.length / ((last - first) / 1000)) : null;
  }
  return out;
}
