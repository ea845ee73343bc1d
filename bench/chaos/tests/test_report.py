import unittest

from bench.chaos import report


def fault(kind, start, end):
    return {"kind": kind, "start": start, "end": end, "target": "hg-0"}


class Explain(unittest.TestCase):
    def test_a_duplicate_after_a_kill_is_explained_by_it(self):
        duplicate = {"id": "a", "run": 1, "due": 100.0, "received": [100.1, 104.0]}
        self.assertEqual(report.explain(duplicate, [fault("kill9", 99.0, 102.0)], 15)["kind"], "kill9")

    def test_a_memory_alarm_a_full_queue_a_stall_a_lock_or_a_clock_step_explains_nothing(self):
        duplicate = {"id": "a", "run": 1, "due": 100.0, "received": [100.1, 104.0]}
        faults = [fault(kind, 99.0, 102.0) for kind in
                  ("memory_alarm", "full_queue", "pg_stall", "lock_instances", "lock_jobs", "clock_step")]
        self.assertIsNone(report.explain(duplicate, faults, 15))

    def test_a_fault_long_after_the_second_copy_explains_nothing(self):
        duplicate = {"id": "a", "run": 1, "due": 100.0, "received": [100.1, 101.0]}
        self.assertIsNone(report.explain(duplicate, [fault("kill9", 200.0, 202.0)], 15))

    def test_a_fault_long_before_explains_nothing(self):
        duplicate = {"id": "a", "run": 1, "due": 300.0, "received": [300.1, 301.0]}
        self.assertIsNone(report.explain(duplicate, [fault("sigstop", 100.0, 105.0)], 15))

    def test_the_latest_fault_that_fits_is_named(self):
        duplicate = {"id": "a", "run": 1, "due": 100.0, "received": [100.1, 106.0]}
        faults = [fault("kill9", 95.0, 97.0), fault("pg_immediate", 103.0, 105.0)]
        self.assertEqual(report.explain(duplicate, faults, 15)["kind"], "pg_immediate")


class Summary(unittest.TestCase):
    def result(self, **changes):
        base = {"accepted": 10, "releases": 11, "lost": 0, "early": 0, "worst_lateness_ms": 1500.0,
                "duplicates": [{"id": "a", "run": 1, "due": 100.0, "received": [100.1, 104.0]}]}
        base.update(changes)
        return base

    def test_explained_duplicates_keep_the_verdict(self):
        summary = report.summarize(self.result(), [fault("kill9", 99.0, 102.0)], 15, parked=0)
        self.assertEqual(summary["duplicates_by_cause"], {"kill9": 1})
        self.assertTrue(report.ok(summary))

    def test_each_broken_invariant_breaks_the_verdict(self):
        faults = [fault("kill9", 99.0, 102.0)]
        for changes, parked in (({"lost": 1}, 0), ({"early": 1}, 0), ({}, 1),
                                ({"duplicates": [{"id": "b", "run": 1, "due": 500.0, "received": [500.0, 501.0]}]}, 0)):
            with self.subTest(changes=changes, parked=parked):
                self.assertFalse(report.ok(report.summarize(self.result(**changes), faults, 15, parked)))


if __name__ == "__main__":
    unittest.main()
