"""`make bench`, truncate parts. Writes bench/results/truncate.{json,md}.

large: planning and applying the repair of a large segment with a torn tail, against shallow verify of the
same file. The damage is BENCH_TAIL_BYTES (default 1 MiB) of garbage appended to the large segment bench.run
generates (BENCH_BYTES, default 1 GB); the bench leaves the segment as it found it.

segments: apply and restore time against plan time for partitions of many one-batch segments (BENCH_SEGMENTS,
default "100,2000,50000"), damaged in segment DAMAGED_SEGMENT so that the repair cuts it and quarantines every
later segment, as Kafka's recovery would. The apply and the restore run in a child process, each stopped
after BENCH_APPLY_CAP_S (default 600) seconds and reported as over the cap (null in the JSON).

BENCH_TRUNCATE_PARTS (default "large,segments") picks the parts to run; the figures of a part not run are
kept from the previous truncate.json.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import sys
import time
from pathlib import Path

from bench.run import DATA, RESULTS, best, partition_dir, write_results
from bench.segments import damage, disk_use, write_segments
from logtool.checks.engine import check_target
from logtool.store.discover import Target
from logtool.recovery.restore import restore
from logtool.recovery.truncate import apply_plan
from logtool.recovery.truncate_plan import RepairPlan, plan_repair

TAIL_BYTES = int(os.environ.get("BENCH_TAIL_BYTES", 1 << 20))
PARTS = os.environ.get("BENCH_TRUNCATE_PARTS", "large,segments").split(",")
SEGMENT_COUNTS = [int(n) for n in os.environ.get("BENCH_SEGMENTS", "100,2000,50000").split(",")]
CAP_S = float(os.environ.get("BENCH_APPLY_CAP_S", 600))
DAMAGED_SEGMENT = 10  # the 11th segment: ten whole segments stay in front of the cut
INTERVAL = 4096  # index.interval.bytes, Kafka's default


def main() -> int:
    res = previous_results()
    if "large" in PARTS:
        res["large"] = large_part()
    if "segments" in PARTS:
        res["segments"] = segments_part()
    write_results("truncate", res, render)
    return 0


def previous_results() -> dict:
    """The figures of the last run, so that running one part keeps the other's. A truncate.json from before
    the segments part (the large part's figures at the top level) is read as the large part."""
    try:
        old = json.loads((RESULTS / "truncate.json").read_text())
    except (OSError, ValueError):
        return {}
    return {"large": old} if "segment_bytes" in old else old


# --- large: one big segment with a torn tail ---------------------------------------------------------------


def large_part() -> dict:
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
        t_plan, plan = best(lambda: plan_repair([part], False, INTERVAL))
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
    return {"segment_bytes": size, "tail_bytes": TAIL_BYTES, "verify_shallow_s": round(t_verify, 3),
            "plan_s": round(t_plan, 3), "apply_s": round(t_apply, 3), "restore_s": round(t_restore, 3),
            "quarantined_bytes": kept, "plan_over_verify": round(t_plan / t_verify, 2),
            "apply_over_verify": round(t_apply / t_verify, 2)}


# --- segments: many small segments, cut near the start -----------------------------------------------------


def segments_part() -> dict:
    return {"damaged_segment": DAMAGED_SEGMENT, "cap_s": CAP_S, "sizes": [segments_size(n) for n in SEGMENT_COUNTS]}


def segments_size(n: int) -> dict:
    """Generate, damage, plan, apply and restore one partition of `n` segments, then remove it."""
    log_dir, quarantine = DATA / f"segments-{n}", DATA / f"segments-{n}-quarantine"  # never inside the log dir
    for d in (log_dir, quarantine):
        shutil.rmtree(d, ignore_errors=True)
    try:
        t = time.perf_counter()
        part = write_segments(log_dir, n)
        t_generate = time.perf_counter() - t
        file_bytes, disk_bytes = disk_use(part)
        damage(part, DAMAGED_SEGMENT)
        before = listing(part)
        t_plan, plan = best(lambda: plan_repair([part], False, INTERVAL))
        quarantined = check_plan(plan, n)
        print(f"{n} segments: generated in {t_generate:.1f} s, plan {t_plan:.3f} s; applying (cap {CAP_S:g} s) ...",
              file=sys.stderr)
        t_apply, t_restore = apply_and_restore_capped(plan, quarantine)
        if t_restore is not None:
            assert listing(part) == before, "restore must give back every file"
    finally:
        for d in (log_dir, quarantine):
            shutil.rmtree(d, ignore_errors=True)
    return {"segments": n, "generate_s": round(t_generate, 2), "file_bytes": file_bytes, "disk_bytes": disk_bytes,
            "quarantined_segments": quarantined, "plan_s": round(t_plan, 3), "apply_s": _round(t_apply),
            "restore_s": _round(t_restore), "apply_over_plan": _ratio(t_apply, t_plan),
            "restore_over_plan": _ratio(t_restore, t_plan)}


def check_plan(plan: RepairPlan, n: int) -> int:
    """The number of segments the plan quarantines, checked to be what Kafka's recovery drops: the damaged
    one (cut to nothing, its one batch being the bad one) and every later one."""
    (p,) = plan.pending
    cut = [a for a in p.actions if a.action == "truncate"]
    removed = [a for a in p.actions if a.action == "quarantine segment"]
    assert len(cut) == 1 and cut[0].to_bytes == 0, cut
    assert len(cut) + len(removed) == n - DAMAGED_SEGMENT, (len(removed), n)
    return len(cut) + len(removed)


def listing(part: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in part.iterdir()}


def apply_and_restore_capped(plan: RepairPlan, quarantine: Path) -> tuple[float | None, float | None]:
    """Seconds of `apply_plan` and then of `restore` of its run, None for one stopped at CAP_S (and for a
    restore not run because the apply was stopped). The child is spawned, not forked: the parent may hold
    the kernel's threads, which a fork does not copy."""
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_apply_and_restore, args=(plan, quarantine, send))
    child.start()
    send.close()  # the child's copy is the only one left: its exit ends the pipe
    try:
        t_apply = _within_cap(receive, child)
        t_restore = _within_cap(receive, child) if t_apply is not None else None
    finally:
        child.kill()  # past the cap; a no-op when the child is done
        child.join()
    return t_apply, t_restore


def _apply_and_restore(plan: RepairPlan, quarantine: Path, send) -> None:
    """In the child: each phase's own seconds, sent as it ends (the parent's clock would add the spawn)."""
    t = time.perf_counter()
    applied = apply_plan(plan, quarantine, "bench")
    send.send(time.perf_counter() - t)
    t = time.perf_counter()
    restore(applied.run)
    send.send(time.perf_counter() - t)


def _within_cap(receive, child) -> float | None:
    """The next phase's seconds from the child, or None when CAP_S passes first."""
    if not receive.poll(CAP_S):
        return None
    try:
        return receive.recv()
    except EOFError:  # the child died: its traceback is on stderr
        child.join()
        raise RuntimeError(f"the apply/restore child failed (exit code {child.exitcode})") from None


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def _ratio(seconds: float | None, plan_s: float) -> float | None:
    return None if seconds is None else round(seconds / plan_s, 1)


# --- results -----------------------------------------------------------------------------------------------


def render(r: dict) -> str:
    large = render_large(r["large"]) if "large" in r else ""
    segments = render_segments(r["segments"]) if "segments" in r else ""
    return "# truncate benchmark\n" + large + segments


def render_large(r: dict) -> str:
    return f"""
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


def render_segments(r: dict) -> str:
    over = f"over cap (> {r['cap_s']:g} s)"

    def seconds(s: float | None) -> str:
        return over if s is None else str(s)

    def restored(s: dict) -> str:  # no run to restore when the apply was stopped
        return seconds(s['restore_s']) if s['apply_s'] is not None else "not run"

    def ratio(x: float | None) -> str:
        return "" if x is None else f"{x}x"

    rows = "".join(
        f"| {s['segments']:,} | {s['quarantined_segments']:,} | {s['plan_s']} | {seconds(s['apply_s'])} | "
        f"{ratio(s['apply_over_plan'])} | {restored(s)} | {ratio(s['restore_over_plan'])} | "
        f"{s['generate_s']} | {s['disk_bytes'] / 1e6:,.1f} MB |\n"
        for s in r["sizes"])
    return f"""
## many segments

A partition of one-batch segments (each with its `.index` and `.timeindex`), with a bit flipped in segment
{r['damaged_segment']}'s batch: the repair cuts that segment and quarantines it and every later one, as Kafka's
recovery deletes them. Seconds of each step, and of apply and restore against the plan (dry run):

| segments | quarantined | plan | `--apply` | apply / plan | `restore` | restore / plan | generating | on disk |
|---|---|---|---|---|---|---|---|---|
{rows}"""


if __name__ == "__main__":
    sys.exit(main())
