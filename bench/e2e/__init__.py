"""hourglass's end-to-end benchmarks: `scripts/bench` starts the services, builds the drivers
and runs `python3 -m bench.e2e` with their addresses in the environment.

Layout: settings (the run's inputs), measure (CPU, broker and PostgreSQL counters), process
(hourglass and the drivers), results (JSON lines), scenarios/ (one module per scenario),
report (the table), figures (pure helpers), plotting (gnuplot).
"""
