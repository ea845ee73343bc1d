import assert from 'node:assert/strict';
import { test } from 'node:test';

import { dueTimes, quantile, seededRandom, summarize } from './stats.mjs';

test('the same seed gives every peer the same due times, spread within the window', () => {
  const a = dueTimes(1000, 10000, 5000, 7);
  assert.deepEqual(a, dueTimes(1000, 10000, 5000, 7));
  assert.notDeepEqual(a, dueTimes(1000, 10000, 5000, 8));
  assert.ok(a.every((d) => d >= 5000 && d < 15000));
  assert.ok(new Set(a).size > 900);
  assert.deepEqual(dueTimes(3, 0, 42), [42, 42, 42]);
  const random = seededRandom(1);
  assert.ok(random() >= 0 && random() < 1);
});

test('quantiles take the nearest rank', () => {
  const values = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(quantile(values, 0.5), 50);
  assert.equal(quantile(values, 0.99), 99);
  assert.equal(quantile(values, 1), 100);
  assert.equal(quantile([], 0.5), null);
});

test('lateness counts from the due time to the first handling; lost, duplicated and early jobs are counted', () => {
  const due = [1000, 2000, 3000, 4000];
  const handled = { 0: [1005], 1: [1990, 2100], 3: [4010] };
  const out = summarize(due, handled);
  assert.equal(out.jobs, 4);
  assert.equal(out.handled, 3);
  assert.equal(out.lost, 1);
  assert.equal(out.duplicates, 1);
  assert.equal(out.early, 1);
  assert.equal(out.lateness_min_ms, -10);
  assert.equal(out.lateness_max_ms, 10);
  assert.equal(out.lateness_p50_ms, 5);
  assert.equal(out.drain_s, undefined); // not a hotspot
});

test('a hotspot reports its drain from the instant to the last job handled', () => {
  const due = [10000, 10000, 10000, 10000];
  const out = summarize(due, { 0: [10100], 1: [10500], 2: [11000], 3: [12100] });
  assert.equal(out.first_handled_after_due_ms, 100);
  assert.equal(out.drain_s, 2.1);
  assert.equal(out.drain_per_s, Math.round(4 / 2.1));
  assert.equal(out.drain_after_first_per_s, 2);
});
