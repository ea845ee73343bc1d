"""The benchmarks' pure parts: medians of alternating rounds, the table's number format, the
statement names of the cost figures, and the plots' data."""

import json
import os
import tempfile
import unittest

from bench import plotting
from bench.e2e.figures import (CLAIM_EXPLAIN_ARGS, fmt, handover_summary, knee_of, median_round, parameter_count,
                               retention_ms, statement_name)


class ClaimExplain(unittest.TestCase):
    def test_passes_as_many_arguments_as_the_claim_statement_takes(self):
        # The scale scenario's EXPLAIN failed for a while after the statement lost a parameter.
        with open(os.path.join("src", "store", "sql", "claim_due.sql")) as f:
            self.assertEqual(len(CLAIM_EXPLAIN_ARGS), parameter_count(f.read()))

    def test_counts_the_highest_parameter(self):
        self.assertEqual(parameter_count("SELECT $2, $10, $1"), 10)
        self.assertEqual(parameter_count("SELECT 1"), 0)


class HandoverSummary(unittest.TestCase):
    BEFORE = [(0.001, 90.0), (0.005, 95.0), (0.05, 96.0), (float("inf"), 100.0)]
    AFTER = [(0.001, 180.0), (0.005, 193.0), (0.05, 195.0), (float("inf"), 200.0)]

    def test_bounds_the_quantiles_of_the_runs_handed_over_since_an_earlier_reading(self):
        out = handover_summary(self.AFTER, since=self.BEFORE)
        # 100 runs since: 90 within 1 ms, 98 within 5 ms, 99 within 50 ms.
        self.assertEqual(out["runs"], 100)
        self.assertEqual(out["p50_ms_at_most"], 1.0)
        self.assertEqual(out["p99_ms_at_most"], 50.0)
        self.assertEqual(out["over_5ms_share"], 0.02)
        self.assertEqual(out["over_50ms_share"], 0.01)

    def test_without_an_earlier_reading_counts_every_run(self):
        out = handover_summary(self.AFTER)
        # 200 runs: 195 within 50 ms, short of the 198 that p99 needs.
        self.assertEqual(out["runs"], 200)
        self.assertEqual(out["p99_ms_at_most"], float("inf"))
        self.assertEqual(out["over_5ms_share"], 0.035)

    def test_nothing_handed_over_is_no_figure(self):
        self.assertIsNone(handover_summary(self.BEFORE, since=self.BEFORE))
        self.assertIsNone(handover_summary(None))


class MedianRound(unittest.TestCase):
    def test_a_figure_no_round_has_is_left_out(self):
        rounds = [{"lateness_p99_ms": 9.0, "lost": 0, "duplicates": 0},
                  {"lateness_p99_ms": 5.0, "lost": 0, "duplicates": 0}]
        out = median_round(rounds, medians=("lateness_p99_ms", "handover_p99_ms_at_most"),
                           sums=("lost",))
        self.assertEqual(out["lateness_p99_ms"], 9.0)
        self.assertNotIn("handover_p99_ms_at_most", out)

    def test_takes_the_median_of_each_figure_sums_counts_and_keeps_every_round(self):
        rounds = [
            {"lateness_p50_ms": 2.0, "lateness_p99_ms": 9.0, "lateness_max_ms": 30, "jobs": 10, "lost": 0,
             "early": 0, "duplicates": 1, "cost": "a"},
            {"lateness_p50_ms": 1.0, "lateness_p99_ms": 5.0, "lateness_max_ms": 90, "jobs": 10, "lost": 1,
             "early": 0, "duplicates": 0, "cost": "b"},
            {"lateness_p50_ms": 3.0, "lateness_p99_ms": 7.0, "lateness_max_ms": 10, "jobs": 10, "lost": 0,
             "early": 2, "duplicates": 0, "cost": "c"},
        ]
        out = median_round(rounds)
        self.assertEqual(out["lateness_p50_ms"], 2.0)
        self.assertEqual(out["lateness_p99_ms"], 7.0)
        self.assertEqual(out["lateness_max_ms"], 30)
        self.assertEqual(out["lateness_p99_ms_rounds"], [9.0, 5.0, 7.0])
        self.assertEqual((out["jobs"], out["lost"], out["early"], out["duplicates"]), (30, 1, 2, 1))
        self.assertEqual(out["cost"], "c")  # from the round with the median p99
        self.assertEqual(out["rounds"], 3)

    def test_an_even_count_takes_the_upper_median_and_least_the_smallest(self):
        rounds = [{"x": 1, "within": 5}, {"x": 4, "within": 3}]
        out = median_round(rounds, by="x", medians=("x",), sums=(), least=("within",))
        self.assertEqual(out["x"], 4)
        self.assertEqual(out["within"], 3)


class Format(unittest.TestCase):
    def test_numbers_keep_three_significant_places_and_counts_their_separators(self):
        self.assertEqual(fmt(None), "-")
        self.assertEqual(fmt(True), "yes")
        self.assertEqual(fmt(12345), "12,345")
        self.assertEqual(fmt(1234.5), "1,234")
        self.assertEqual(fmt(123.4), "123")
        self.assertEqual(fmt(12.34), "12.3")
        self.assertEqual(fmt(1.234, " ms"), "1.23 ms")

    def test_retention_reads_the_cli_units(self):
        self.assertEqual(retention_ms("90s"), 90000)
        self.assertEqual(retention_ms("1m"), 60000)
        self.assertEqual(retention_ms("2d"), 2 * 86400000)
        self.assertEqual(retention_ms("soon"), 0)


class StatementName(unittest.TestCase):
    def test_names_the_statements_the_cost_figures_count(self):
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "store", "sql",
                               "claim_due.sql"), encoding="utf-8") as f:
            claim = "\n".join(line for line in f if not line.lstrip().startswith("--"))
        self.assertEqual(statement_name(claim), "claim_due")
        self.assertEqual(statement_name("  commit"), "commit")
        self.assertEqual(statement_name("SELECT something else entirely, and more text"),
                         "SELECT something else entirely, and more")


class Plotting(unittest.TestCase):
    def test_data_blocks_leave_missing_values_out_and_end_with_e(self):
        self.assertEqual(plotting.data_block([(1, 2.5), (2, None)]), "1 2.5\n2 NaN\ne")

    def test_reads_the_lines_of_one_scenario(self):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write(json.dumps({"scenario": "steady", "x": 1}) + "\n\n")
            f.write(json.dumps({"scenario": "hotspot", "x": 2}) + "\n")
        try:
            self.assertEqual([r["x"] for r in plotting.read_results(f.name)], [1, 2])
            self.assertEqual([r["x"] for r in plotting.read_results(f.name, "hotspot")], [2])
        finally:
            os.unlink(f.name)




class Knee(unittest.TestCase):
    def test_is_the_highest_rate_within_50_ms_in_every_round_below_the_first_miss(self):
        ok, slow = {"lateness_p99_ms": 12.0, "lost": 0}, {"lateness_p99_ms": 80.0, "lost": 0}
        lost = {"lateness_p99_ms": 5.0, "lost": 3}
        self.assertEqual(knee_of({1000: [ok, ok], 2000: [ok, ok], 4000: [ok, slow], 8000: [ok, ok]}), 2000)
        self.assertEqual(knee_of({1000: [ok], 2000: [lost]}), 1000, "a rate that loses jobs is past it")
        self.assertIsNone(knee_of({1000: [slow]}))
        self.assertIsNone(knee_of({1000: [{"lateness_p99_ms": None}]}), "no figure is no pass")


if __name__ == "__main__":
    unittest.main()
