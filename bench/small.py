"""`make bench`, small partitions: `logtool verify` (and `--deep`) of a log dir of single-segment partitions
against aiokafka's bare loops over the same `.log` files, each a whole process as a user runs it, at 2,000 and
4,000 partitions in one run: the whole command's ratio at 2,000 and the cost of each further partition (the
slope between the two, in ms per 1,000 partitions) beside the peer's. Issue 30's goals: logtool's slope no
higher than the peer's, the whole command within 1.5x of the peer's whole process.

The peers (bench/peers.py) are aiokafka's CRC-checking batch iteration (against `verify`) and its record
iteration (against `--deep`); their process lists the log dir and each partition dir with os.scandir, reads
each `.log` whole and iterates it, and reads nothing else (no index, checkpoint or metadata file). Each figure
is the best of BENCH_REPEAT (default 5) runs, the contenders taken in turn in each round, so that a busy moment
of the machine falls on all of them alike; beside each wall time, the CPU time (user + system) of the same
process, which a machine shared with other work disturbs less. The load average is written with the figures.

BENCH_BASELINE=DIR (a directory holding another revision's `logtool` package, its extensions built, e.g. a
`git worktree`) adds that revision's `logtool verify` to every round: before and after from one run.

The log dirs (fixtures/fleet.py, as bench/kernel.py's small partitions: about 11.5 KB of batches each, an
.index, .timeindex, leader-epoch-checkpoint and partition.metadata beside each segment, the log dir's
checkpoints) are generated once into bench/data/small-N. Writes bench/results/small.{json,md}.
"""
from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.run import DATA, MEASURED_CHILD, child_env, write_results
from fixtures.fleet import TopicSpec, write_fleet

SIZES = (2000, 4000)
REPEAT = int(os.environ.get("BENCH_REPEAT", 5))
BASELINE = os.environ.get("BENCH_BASELINE")
PARTITION_BYTES = 11_500
BATCHES_PER_PARTITION = 62  # what PARTITION_BYTES of the fleet's batches come to
ROOT = Path(__file__).resolve().parents[1]
MODES = ("shallow", "deep")

# The peer as a whole process: Python, aiokafka's import, the listing, and its loop over every .log file.
PEER_CHILD = """
import os, sys
sys.path.insert(0, sys.argv[3])
from bench.peers import aiokafka_batches, aiokafka_records
loop = aiokafka_records if sys.argv[1] == "deep" else aiokafka_batches
batches = records = 0
with os.scandir(sys.argv[2]) as log_dir:
    for d in log_dir:
        if not d.is_dir():
            continue
        with os.scandir(d.path) as files:
            for f in files:
                if f.name.endswith(".log"):
                    with open(f.path, "rb") as fh:
                        data = fh.read()
                    b, r = loop(data)
                    batches += b
                    records += r or 0
print(batches, records)
"""


def small_partitions(n: int) -> Path:
    """A log dir of `n` single-segment partitions (generated once)."""
    root = DATA / f"small-{n}"
    if not root.exists():
        print(f"generating {n:,} small partitions into {root} ...", file=sys.stderr)
        write_fleet(root, [TopicSpec("small", n, PARTITION_BYTES)], brokers=1, replication=1, plant=False)
    return root / "broker-0"


def run(argv: list[str], env: dict[str, str]) -> dict:
    """A process's wall seconds, exit code, stdout and stderr (its CPU time: `Children`)."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd="/")
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    return {"wall": wall, "exit": proc.returncode, "stdout": out, "stderr": err}


class Children:
    """CPU seconds of each child, from what RUSAGE_CHILDREN gains across its run: the children run one at a
    time, and each is waited for (reaped) before the next."""

    def __init__(self) -> None:
        self.last = self._now()

    @staticmethod
    def _now() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def since(self) -> float:
        now = self._now()
        spent, self.last = now - self.last, now
        return spent


def logtool(mode: str, log_dir: Path, env: dict[str, str], cpu: Children) -> tuple[float, float, float]:
    """(wall, CPU, peak RSS in MB) of `logtool verify [--deep] LOG_DIR > /dev/null` as bench.run measures it."""
    args = ["verify", "--deep", str(log_dir)] if mode == "deep" else ["verify", str(log_dir)]
    cpu.since()
    r = run([sys.executable, "-c", MEASURED_CHILD, *args], env)
    spent = cpu.since()
    assert r["exit"] == 0, r["stderr"][-2000:]
    return r["wall"], spent, int(r["stderr"].split()[-1]) / 1024


def peer(mode: str, log_dir: Path, env: dict[str, str], cpu: Children) -> tuple[float, float, int, int]:
    """(wall, CPU, batches, records) of aiokafka's loop over the log dir's .log files, as a process."""
    cpu.since()
    r = run([sys.executable, "-c", PEER_CHILD, mode, str(log_dir), str(ROOT)], env)
    spent = cpu.since()
    assert r["exit"] == 0, r["stderr"][-2000:]
    batches, records = map(int, r["stdout"].split())
    return r["wall"], spent, batches, records


def rounds(dirs: dict[int, Path], envs: dict[str, dict[str, str]]) -> dict:
    """Every contender at every size, REPEAT rounds: wall and CPU seconds of each run, peak RSS, counts, loads."""
    m: dict = {"wall": {}, "cpu": {}, "rss": {}, "counts": {}, "loads": [os.getloadavg()[0]]}
    cpu = Children()
    for _ in range(REPEAT):
        for n in SIZES:
            for mode in MODES:
                for w in envs:
                    key = f"{w}_{mode}_{n}"
                    if w == "aiokafka":
                        t, c, batches, records = peer(mode, dirs[n], envs[w], cpu)
                        m["counts"][key] = (batches, records)
                    else:
                        t, c, peak = logtool(mode, dirs[n], envs[w], cpu)
                        m["rss"][key] = max(m["rss"].get(key, 0.0), round(peak, 1))
                    m["wall"].setdefault(key, []).append(t)
                    m["cpu"].setdefault(key, []).append(c)
        m["loads"].append(os.getloadavg()[0])
    return m


def start_up(one: Path, env: dict[str, str]) -> dict:
    """Best wall and CPU seconds of Python alone, `logtool --version` and `logtool verify` of one partition."""
    cpu, starts = Children(), {}
    for name, argv in (("python -c pass", [sys.executable, "-c", "pass"]),
                       ("logtool --version", [sys.executable, "-c", MEASURED_CHILD, "--version"]),
                       ("logtool verify, one small partition", [sys.executable, "-c", MEASURED_CHILD, "verify",
                                                                str(one)])):
        times = []
        for _ in range(REPEAT):
            cpu.since()
            t = run(argv, env)["wall"]
            times.append((t, cpu.since()))
        starts[name] = {"wall_s": round(min(t for t, _ in times), 4), "cpu_s": round(min(c for _, c in times), 4)}
    return starts


def figures(m: dict, who: list[str]) -> dict:
    """Per mode: each contender's best at each size, the slope and where its line meets zero partitions, and
    the ratios (and the speed-up over the baseline, when there is one)."""
    lo, hi = SIZES
    out = {}
    for mode in MODES:
        row: dict = {}
        for w in who:
            row[w] = {}
            for clock in ("wall", "cpu"):
                a, b = min(m[clock][f"{w}_{mode}_{lo}"]), min(m[clock][f"{w}_{mode}_{hi}"])
                slope = (b - a) / (hi - lo)  # seconds per partition
                row[w][clock] = {f"at_{lo}_s": round(a, 4), f"at_{hi}_s": round(b, 4),
                                 "ms_per_1000": round(slope * 1e6, 1), "fixed_s": round(a - slope * lo, 4)}
        for clock in ("wall", "cpu"):
            ours, theirs = row["logtool"][clock], row["aiokafka"][clock]
            row[f"ratios_{clock}"] = {"whole_at_lo": round(ours[f"at_{lo}_s"] / theirs[f"at_{lo}_s"], 2),
                                      "whole_at_hi": round(ours[f"at_{hi}_s"] / theirs[f"at_{hi}_s"], 2),
                                      "slope": round(ours["ms_per_1000"] / theirs["ms_per_1000"], 2)}
            if "baseline" in row:
                before = row["baseline"][clock]
                row[f"speedup_over_baseline_{clock}"] = {
                    "whole_at_lo": round(before[f"at_{lo}_s"] / ours[f"at_{lo}_s"], 2),
                    "slope": round(before["ms_per_1000"] / ours["ms_per_1000"], 2)}
        out[mode] = row
    return out


def main() -> int:
    dirs = {n: small_partitions(n) for n in SIZES}
    for d in dirs.values():  # the page cache warm for every contender
        for f in d.glob("*/*"):
            f.read_bytes()
    env = child_env()
    envs = {"logtool": env, "aiokafka": env}
    if BASELINE:
        envs["baseline"] = {**env, "PYTHONPATH": BASELINE}
    m = rounds(dirs, envs)
    for n in SIZES:  # the peers read every batch logtool checks
        c = m["counts"]
        assert c[f"aiokafka_shallow_{n}"][0] == c[f"aiokafka_deep_{n}"][0] == n * BATCHES_PER_PARTITION, c
    res: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "repeat": REPEAT, "partitions": list(SIZES), "baseline": BASELINE,
        "load_average_1min": {"min": round(min(m["loads"]), 2), "max": round(max(m["loads"]), 2)},
        "batches": {str(n): m["counts"][f"aiokafka_shallow_{n}"][0] for n in SIZES},
        "records": {str(n): m["counts"][f"aiokafka_deep_{n}"][1] for n in SIZES},
        "max_rss_mb": m["rss"], "start_up": start_up(dirs[SIZES[0]] / "small-0", env),
        **figures(m, list(envs)),
    }
    write_results("small", res, render)
    return 0


def render(r: dict) -> str:
    lo, hi = r["partitions"]
    peers = {"shallow": "aiokafka batch iteration + CRC", "deep": "aiokafka record iteration"}
    commands = {"shallow": "`logtool verify DIR`", "deep": "`logtool verify --deep DIR`"}

    def cells(f: dict) -> str:
        w, c = f["wall"], f["cpu"]
        return (f"{w[f'at_{lo}_s']} s ({c[f'at_{lo}_s']}) | {w[f'at_{hi}_s']} s ({c[f'at_{hi}_s']}) | "
                f"{w['ms_per_1000']} ms ({c['ms_per_1000']}) | {w['fixed_s']} s ({c['fixed_s']})")

    rows = []
    for mode in MODES:
        m = r[mode]
        rows.append(f"| {commands[mode]} | {cells(m['logtool'])} |")
        rows.append(f"| {peers[mode]} | {cells(m['aiokafka'])} |")
        if "baseline" in m:
            rows.append(f"| {commands[mode]}, the baseline | {cells(m['baseline'])} |")
    goals = []
    for mode in MODES:
        w, c = r[mode]["ratios_wall"], r[mode]["ratios_cpu"]
        goals.append(f"| {commands[mode]} / {peers[mode]} | **{w['whole_at_lo']}x** ({c['whole_at_lo']}x); "
                     f"{w['whole_at_hi']}x at {hi:,} | **{w['slope']}x** ({c['slope']}x) |")
    before = ""
    if r["baseline"]:
        before = "\n\nAgainst the baseline (" + r["baseline"] + "), this revision is " + "; ".join(
            f"{r[mode]['speedup_over_baseline_wall']['whole_at_lo']}x as fast {mode} at {lo:,} partitions (per "
            f"partition: {r[mode]['speedup_over_baseline_wall']['slope']}x)" for mode in MODES) + "."
    starts = "; ".join(f"`{name}` {s['wall_s']} s ({s['cpu_s']})" for name, s in r["start_up"].items())
    nl = "\n"
    return f"""# Small partitions: logtool against the bare loops of aiokafka ({lo:,} and {hi:,} single-segment partitions)

{r['machine']}; best of {r['repeat']} runs, the contenders in turn in each round; load average (1 min)
{r['load_average_1min']['min']}-{r['load_average_1min']['max']} during the run. Each figure is a whole process
as a user runs it (Python's start, the imports, the listing, every partition, the output): wall time, and in
parentheses its CPU time (user + system), which other work on the machine disturbs less. {r['batches'][str(lo)]:,}
and {r['batches'][str(hi)]:,} batches; the peers read the `.log` files alone, logtool also every index,
checkpoint and metadata file beside them and the log dir's own, and reports on each partition.

| process | {lo:,} partitions | {hi:,} | per 1,000 more | fixed (the line at 0) |
|---|---|---|---|---|
{nl.join(rows)}

| ratio (goal) | whole command at {lo:,} (1.5x) | per partition, the slope (1x) |
|---|---|---|
{nl.join(goals)}

Start-up alone: {starts}. Peak RSS of `logtool verify` at {hi:,}: {r['max_rss_mb'][f'logtool_shallow_{hi}']} MB,
`--deep` {r['max_rss_mb'][f'logtool_deep_{hi}']} MB.{before}
"""  # noqa: E501 - the report's Markdown: a table row, or a line, as it is written


if __name__ == "__main__":
    sys.exit(main())
