"""The plots' shared parts: results files read as rows, data blocks inlined in a gnuplot script,
and gnuplot run on it. Used by bench/plots/* and by the longrun scenario (bench/e2e)."""

import json
import shutil
import subprocess


def read_results(path, scenario=None):
    """The JSON lines of a results file (bench/results/*.jsonl), those of `scenario` if given."""
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if scenario is None or r.get("scenario") == scenario]


def data_lines(points):
    """Points (tuples of numbers or words) as gnuplot data, a line each. None becomes NaN,
    which gnuplot leaves out."""
    return "\n".join(" ".join("NaN" if v is None else str(v) for v in point) for point in points)


def data_block(points):
    """The same, inline in a script: ended by `e`."""
    return data_lines(points) + "\ne"


def available():
    return shutil.which("gnuplot") is not None


def draw(script):
    """Runs gnuplot on `script` (which sets its terminal and output). Raises RuntimeError with
    gnuplot's message if it is missing or fails."""
    if not available():
        raise RuntimeError("gnuplot not found (apt-get install gnuplot-nox)")
    r = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"gnuplot failed: {r.stderr.strip()[:300]}")
