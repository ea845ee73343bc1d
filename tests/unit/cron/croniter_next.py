#!/usr/bin/env python3
"""croniter's answers for the cron differential test (differential_test.cpp).

Reads one query per line on stdin:  <expression in hourglass syntax> TAB <IANA zone> TAB <after,
seconds since the epoch, may have a fraction>.  Prints one line per query:

    <next run, whole seconds since the epoch | none | error:<message>> <day_or: 0|1>

where day_or tells whether croniter combined day-of-month and day-of-week with OR (the Vixie
rule), so that the test can leave out the expressions where croniter decides that differently
from reference §5.

Only syntax is translated here; every difference in meaning is handled (and documented) in the
C++ test:
  * hourglass puts seconds FIRST in six-field expressions, croniter puts them LAST;
  * croniter treats a single `7` in day-of-week as Sunday only in five-field expressions, so a
    lone `7` list element is written as `0` (both mean Sunday in hourglass).
"""
import datetime
import sys
import zoneinfo

from croniter import croniter
from croniter.croniter import CroniterError


def to_croniter_syntax(expression):
    fields = expression.split()
    if len(fields) == 6:
        fields = fields[1:] + fields[:1]
    if len(fields) >= 5:
        fields[4] = ",".join("0" if element == "7" else element
                             for element in fields[4].split(","))
    return " ".join(fields)


def answer(expression, zone_name, after):
    zone = zoneinfo.ZoneInfo(zone_name)
    start = datetime.datetime.fromtimestamp(after, tz=zone)
    try:
        iterator = croniter(to_croniter_syntax(expression), start)
        day_or = int(iterator.expanded[2][0] != "*" and iterator.expanded[4][0] != "*")
        return "%d %d" % (int(iterator.get_next(float)), day_or)
    except CroniterError as error:
        # Both "no run within 50 years" and syntax croniter refuses end up here.
        if "failed to find next date" in str(error):
            return "none 0"
        return "error:%s 0" % str(error).replace(" ", "_")


def main():
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        expression, zone_name, after = line.split("\t")
        print(answer(expression, zone_name, float(after)))


if __name__ == "__main__":
    main()
