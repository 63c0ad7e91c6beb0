"""`make bench`, truncate part: planning and applying the repair of a large segment with a torn tail, against
shallow verify of the same file. Writes bench/results/truncate.{json,md}.

The damage is BENCH_TAIL_BYTES (default 1 MiB) of garbage appended to the large segment bench.run generates
(BENCH_BYTES, default 1 GB); the bench leaves the segment as it found it.
"""
from __future__ import annotations

import os
import random
import shutil
import sys
import time

from bench.run import DATA, best, partition_dir, write_results
from logtool.checks.engine import Target, check_target
from logtool.recovery.restore import restore
from logtool.recovery.truncate import apply_plan
from logtool.recovery.truncate_plan import plan_repair

TAIL_BYTES = int(os.environ.get("BENCH_TAIL_BYTES", 1 << 20))


def main() -> int:
    part = partition_dir()
    log = sorted(part.glob("*.log"))[-1]
    quarantine = DATA / "truncate-quarantine"
    shutil.rmtree(quarantine, ignore_errors=True)
    size = log.stat().st_size
    with open(log, "ab") as f:  # garbage that does not start a batch: a length far past the file end
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff" + random.Random(5).randbytes(TAIL_BYTES - 12))
    try:
        t_verify, rep = best(lambda: check_target(Target(part), False))
        assert any(f.kind.cuts for f in rep.all_findings()), "the appended tail must be damage"
        t_plan, plan = best(lambda: plan_repair([part], False, 4096))
        assert plan.pending
        t = time.perf_counter()
        applied = apply_plan(plan, quarantine, "bench")
        t_apply = time.perf_counter() - t
        kept = sum(f.stat().st_size for f in (applied.run / "files").iterdir())
        assert log.stat().st_size == size
        t = time.perf_counter()
        restore(applied.run)
        t_restore = time.perf_counter() - t
        assert log.stat().st_size == size + TAIL_BYTES
    finally:
        with open(log, "r+b") as f:  # leave the bench data as it was
            f.truncate(size)
        shutil.rmtree(quarantine, ignore_errors=True)
    res = {"segment_bytes": size, "tail_bytes": TAIL_BYTES, "verify_shallow_s": round(t_verify, 3),
           "plan_s": round(t_plan, 3), "apply_s": round(t_apply, 3), "restore_s": round(t_restore, 3),
           "quarantined_bytes": kept, "plan_over_verify": round(t_plan / t_verify, 2),
           "apply_over_verify": round(t_apply / t_verify, 2)}
    write_results("truncate", res, render)
    return 0


def render(r: dict) -> str:
    return f"""# truncate benchmark

A {r['segment_bytes']:,}-byte segment with {r['tail_bytes']:,} bytes of garbage after its last batch (page cache warm):

| | seconds | against shallow verify |
|---|---|---|
| shallow `verify` | {r['verify_shallow_s']} | 1 |
| `truncate` plan (dry run) | {r['plan_s']} | {r['plan_over_verify']}x |
| `truncate --apply` | {r['apply_s']} | {r['apply_over_verify']}x |
| `restore` of that run | {r['restore_s']} | |

The quarantine holds {r['quarantined_bytes']:,} bytes (the cut tail, plus the replaced index files): the kept bytes are
read once, for the sha256 of the original and of what stays, never copied.
"""


if __name__ == "__main__":
    sys.exit(main())
