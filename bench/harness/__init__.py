"""comex evaluation harness (issue 4): runs unmodified programs under the same
cgroup memory limit with Linux swap on disk, swap on zram, comex over loopback
and comex across rate-limited veth links, checks every output against an
unlimited local run, and writes versioned JSON, plots and docs/RESULTS.md.

    python3 -m bench.harness --help

See docs/BENCH.md for the method, docs/DECISIONS.md for the decisions behind it."""
