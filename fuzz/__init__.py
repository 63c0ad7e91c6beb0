"""A seeded mutation fuzzer for logtool: real Kafka files as seeds, byte- and structure-level mutations,
every parser and read-only command as a target, each input run in its own forked worker with a time limit,
an address-space cap and its peak RSS measured.

- `fuzz.seeds`: the seed files (from ../shared/fixtures and fixtures/sample-logdir) by file kind, and the
  partition / log dirs they are placed in.
- `fuzz.mutate`: the mutations (seeded `random.Random`).
- `fuzz.targets`: the targets: `logtool.cli.main` with the argv of a read-only command, and direct parser calls.
- `fuzz.harness`: input generation (deterministic from (seed, index)), the worker processes, the defect
  classes, reproducers.

`python -m bench.fuzz` runs it at scale; `tests/house/test_fuzz.py` runs a fixed-seed slice.
"""
