"""`make fuzz`: the seeded mutation fuzzer (fuzz/) at scale.

    python -m bench.fuzz [--n N] [--seed S] [--jobs J] [--start I]
    python -m bench.fuzz --replay SEED:INDEX [--keep]

Runs inputs START..START+N-1 of SEED (every (file kind x target) pair once per round, in a seeded order),
each in a forked worker with a time limit (10 s for a command, 3 s for a parser call), RLIMIT_AS of 4 GiB
and its peak RSS measured. Prints progress, writes the totals to bench/results/fuzz.md and fuzz.json, and
keeps up to three reproducers per distinct defect under bench/results/fuzz-crashes/ (the mutated file, the
whole input log dir as input.tar.gz, defect.json with the seed, index, kind, target, mutations and
command, and symptom.txt with the traceback). `--replay SEED:INDEX` rebuilds one input exactly and runs it
again, printing everything. N defaults to $N, else 100000; J to $JOBS, else the number of cores.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from fuzz import harness
from fuzz import seeds as seedmod
from fuzz import targets as tg

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PER_SIGNATURE = 3


def _logtool_revision() -> str:
    """Which logtool was fuzzed: $FUZZ_LOGTOOL_REV, else the checkout's commit (and whether logtool/ has
    uncommitted changes)."""
    if os.environ.get("FUZZ_LOGTOOL_REV"):
        return os.environ["FUZZ_LOGTOOL_REV"]
    import logtool
    import subprocess

    where = Path(logtool.__file__).resolve().parents[1]
    try:
        rev = subprocess.run(["git", "-C", str(where), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "logtool"], capture_output=True,
                               text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"{where} (not a git checkout)"
    return f"{rev}{' with uncommitted changes under logtool/' if dirty else ''} ({where})"


def _import_logtool() -> None:
    """Import everything the targets use once, in the driver, so that each forked worker starts warm."""
    import logtool.cli  # noqa: F401
    import logtool.format.batch  # noqa: F401
    import logtool.format.index  # noqa: F401
    import logtool.format.kraft  # noqa: F401
    import logtool.format.meta  # noqa: F401
    import logtool.format.records  # noqa: F401


class Totals:
    def __init__(self) -> None:
        self.inputs = 0
        self.by_kind: Counter = Counter()
        self.by_target: Counter = Counter()
        self.by_pair: Counter = Counter()
        self.exits: dict[str, Counter] = defaultdict(Counter)
        self.classes: Counter = Counter()
        self.defect_inputs = 0
        self.signatures: dict[str, dict] = {}
        self.elapsed: dict[str, list[float]] = defaultdict(list)
        self.peak = (0, None)
        self.min_peak = None
        self.max_start = 0
        self.mutations: Counter = Counter()
        self.saved: Counter = Counter()

    def add(self, v: harness.Verdict) -> None:
        self.inputs += 1
        self.by_kind[v.kind] += 1
        self.by_target[v.target] += 1
        self.by_pair[f"{v.kind} x {v.target}"] += 1
        self.exits[v.target][str(v.exit) if v.exit is not None else ("defect" if v.defects else "-")] += 1
        self.elapsed[v.target].append(v.elapsed)
        for m in v.spec.get("mutations", []):
            self.mutations[re.match(r"[\w-]*", m).group(0) or m[:20]] += 1
        self.max_start = max(self.max_start, v.rss_start)
        if v.peak_rss > self.peak[0]:
            self.peak = (v.peak_rss, f"{v.seed}:{v.index} {v.kind} x {v.target}")
        if self.min_peak is None or 0 < v.peak_rss < self.min_peak:
            self.min_peak = v.peak_rss
        if v.defects:
            self.defect_inputs += 1
            for c in set(v.defects):
                self.classes[c] += 1
            s = self.signatures.setdefault(v.signature, {"count": 0, "classes": sorted(set(v.defects)), "examples": [],
                                                         "more": [], "kinds": Counter(), "targets": Counter()})
            s["count"] += 1
            s["kinds"][v.kind] += 1
            s["targets"][v.target] += 1
            if len(s["examples"]) < PER_SIGNATURE:
                s["examples"].append(v.to_dict())
            elif len(s["more"]) < 20:
                s["more"].append(f"{v.seed}:{v.index} {v.kind} x {v.target}")

    def doc(self, n: int, seed: int, start: int, jobs: int, wall: float) -> dict:
        def pct(xs: list[float], p: float) -> float:
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else 0.0

        return {
            "logtool": _logtool_revision(), "seed": seed, "start": start, "n": n, "jobs": jobs, "inputs": self.inputs,
            "wall_s": round(wall, 1),
            "inputs_per_s": round(self.inputs / wall, 1) if wall else None,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "limits": {"cli_s": harness.CLI_LIMIT_S, "parser_s": harness.PARSER_LIMIT_S,
                       "rss_bytes": harness.RSS_LIMIT, "address_space_bytes": harness.AS_LIMIT},
            "defect_inputs": self.defect_inputs,
            "defects_by_class": {c: self.classes.get(c, 0) for c in harness.CLASSES} |
                                {c: k for c, k in self.classes.items() if c not in harness.CLASSES},
            "distinct_defects": len(self.signatures),
            "peak_rss_max_bytes": self.peak[0], "peak_rss_max_input": self.peak[1],
            "peak_rss_min_bytes": self.min_peak, "rss_at_target_start_max_bytes": self.max_start,
            "inputs_by_kind": dict(sorted(self.by_kind.items())),
            "inputs_by_target": dict(sorted(self.by_target.items())),
            "inputs_by_pair": dict(sorted(self.by_pair.items())),
            "exit_codes_by_target": {t: dict(sorted(c.items())) for t, c in sorted(self.exits.items())},
            "seconds_by_target": {t: {"median": round(statistics.median(x), 4), "p99": round(pct(x, 0.99), 4),
                                      "max": round(max(x), 4)} for t, x in sorted(self.elapsed.items()) if x},
            "mutations": dict(self.mutations.most_common()),
            "defects": {sig: {**s, "kinds": dict(s["kinds"]), "targets": dict(s["targets"])}
                        for sig, s in sorted(self.signatures.items(), key=lambda kv: -kv[1]["count"])},
        }


def _md(doc: dict) -> str:
    mb = lambda b: f"{(b or 0) / 2**20:.1f} MB"  # noqa: E731
    lines = [f"# fuzz: {doc['inputs']:,} inputs, seed {doc['seed']} (indexes "
             f"{doc['start']}..{doc['start'] + doc['n'] - 1})",
             "",
             f"logtool {doc['logtool']}.", "",
             f"{doc['machine']}; {doc['jobs']} workers; wall time {doc['wall_s']} s ({doc['inputs_per_s']} inputs/s). "
             f"Limits: {doc['limits']['cli_s']:g} s per command, {doc['limits']['parser_s']:g} s per parser call, "
             f"peak RSS {mb(doc['limits']['rss_bytes'])}, address space {doc['limits']['address_space_bytes'] >> 30} "
             "GiB.",
             "",
             f"**{doc['defect_inputs']} input(s) with a defect, {doc['distinct_defects']} distinct defect(s).** "
             f"Peak RSS max {mb(doc['peak_rss_max_bytes'])} ({doc['peak_rss_max_input']}); smallest "
             f"{mb(doc['peak_rss_min_bytes'])}; a worker's resident set when its target starts is at most "
             f"{mb(doc['rss_at_target_start_max_bytes'])} (a fresh `logtool` process: about 30 MB).",
             "", "| defect class | inputs |", "|---|---|"]
    lines += [f"| {c} | {k} |" for c, k in doc["defects_by_class"].items()]
    lines += ["", "| file kind | inputs |", "|---|---|"]
    lines += [f"| {k} | {n} |" for k, n in doc["inputs_by_kind"].items()]
    lines += ["", "| target | inputs | exit codes | median s | p99 s | max s |", "|---|---|---|---|---|---|"]
    for t, n in doc["inputs_by_target"].items():
        ex = ", ".join(f"{c}: {k}" for c, k in doc["exit_codes_by_target"].get(t, {}).items())
        s = doc["seconds_by_target"].get(t, {})
        lines.append(f"| {t} | {n} | {ex} | {s.get('median')} | {s.get('p99')} | {s.get('max')} |")
    lines += ["", "| mutation | times applied |", "|---|---|"]
    lines += [f"| {m} | {k} |" for m, k in doc["mutations"].items()]
    lines += ["", "## Defects", ""]
    if not doc["defects"]:
        lines.append("None.")
    for sig, s in doc["defects"].items():
        ex = s["examples"][0]
        lines += [f"### {sig}", "",
                  f"{s['count']} input(s); kinds {s['kinds']}; targets {s['targets']}.", "",
                  f"- reproduce: `python -m bench.fuzz --replay {ex['seed']}:{ex['index']}` "
                  f"({ex['kind']} x {ex['target']}, seed file `{ex['spec'].get('seed_file')}`)",
                  f"- mutations: {ex['spec'].get('mutations')}",
                  f"- symptom: {ex['symptom']}", f"- origin: {ex['origin']}"]
        if ex["spec"].get("argv"):
            lines.append(f"- argv: `{' '.join(ex['spec']['argv'])}`")
        tail = "\n".join(ex["detail"].strip().splitlines()[-14:])
        if tail:
            lines += ["", "```", tail, "```"]
        lines.append("")
    return "\n".join(lines) + "\n"


def replay(seed: int, index: int, keep: bool, as_headroom_mb: int | None = None) -> int:
    """Rebuild and rerun one input. `as_headroom_mb`: cap the worker's address space at what it maps when its
    target starts plus this much, so that an input that takes too much memory fails with a MemoryError whose
    traceback shows the allocation that crossed the line."""
    _import_logtool()
    base = Path(tempfile.mkdtemp(prefix="logtool-fuzz-replay-"))
    cap = -(as_headroom_mb << 20) if as_headroom_mb else harness.AS_LIMIT
    vs = harness.run(seed, [index], 1, base, keep=True, as_limit=cap)
    v = vs[0]
    if "memory" in v.defects and not v.origin and not as_headroom_mb:
        harness.triage_memory(v, base / "triage")
    print(json.dumps({k: val for k, val in v.to_dict().items() if k != "detail"}, indent=2, default=str))
    if v.detail:
        print(v.detail)
    print(f"input kept in {base / f'in-{index}'}" if keep else "", file=sys.stderr)
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if v.defects else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=int(os.environ.get("N", 100000)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SEED", 1)))
    ap.add_argument("--start", type=int, default=0, help="first input index")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", os.cpu_count() or 2)))
    ap.add_argument("--replay", metavar="SEED:INDEX")
    ap.add_argument("--keep", action="store_true", help="with --replay: keep the input dir")
    ap.add_argument("--as-headroom", type=int, metavar="MB",
                    help="with --replay: cap the address space at the worker's size plus MB (a MemoryError then shows "
                         "where the memory goes)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.replay:
        s, i = args.replay.split(":")
        return replay(int(s), int(i), args.keep, args.as_headroom)

    _import_logtool()
    # The workers fork from this driver and run the code it imported now: that is the revision fuzzed, whatever
    # the checkout holds when the run ends.
    os.environ.setdefault("FUZZ_LOGTOOL_REV", _logtool_revision())
    # Stop cleanly (workers killed, partial totals written) on Ctrl-C and on SIGTERM, also when started in the
    # background, where a shell leaves SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    kinds = seedmod.kinds()
    pairs = harness.all_pairs()
    print(f"fuzz: seed {args.seed}, inputs {args.start}..{args.start + args.n - 1}, {args.jobs} workers; "
          f"{len(kinds)} file kinds, {len(tg.CLI) + len(tg.PARSERS)} targets, {len(pairs)} pairs", flush=True)
    crashes = args.results / "fuzz-crashes"
    shutil.rmtree(crashes, ignore_errors=True)
    crashes.mkdir(parents=True, exist_ok=True)
    totals = Totals()
    t0 = time.monotonic()
    last = [t0]

    def on_verdict(v: harness.Verdict, wd: Path) -> None:
        if "memory" in v.defects and not v.origin:
            harness.triage_memory(v, base / "triage")
        totals.add(v)
        if v.defects and totals.saved[v.signature] < PER_SIGNATURE:
            totals.saved[v.signature] += 1
            harness.save_reproducer(v, wd, crashes)
            if totals.saved[v.signature] == 1:
                print(f"  new defect [{v.signature}] at {v.seed}:{v.index} ({v.kind} x {v.target}): {v.symptom[:200]}",
                      flush=True)
        now = time.monotonic()
        if now - last[0] >= 15 or totals.inputs == args.n:
            last[0] = now
            rate = totals.inputs / (now - t0)
            eta = (args.n - totals.inputs) / rate if rate else 0
            print(f"  {totals.inputs}/{args.n} inputs, {totals.defect_inputs} with a defect "
                  f"({len(totals.signatures)} distinct), {rate:.1f}/s, peak RSS max {totals.peak[0] / 2**20:.0f} MB, "
                  f"eta {eta / 60:.1f} min", flush=True)

    base = Path(tempfile.mkdtemp(prefix="logtool-fuzz-"))
    try:
        harness.run(args.seed, range(args.start, args.start + args.n), args.jobs, base, on_verdict)
    except KeyboardInterrupt:
        print("fuzz: interrupted: the totals are those of the inputs run so far", flush=True)
    finally:
        wall = time.monotonic() - t0
        doc = totals.doc(args.n, args.seed, args.start, args.jobs, wall)
        args.results.mkdir(parents=True, exist_ok=True)
        (args.results / "fuzz.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
        (args.results / "fuzz.md").write_text(_md(doc))
        shutil.rmtree(base, ignore_errors=True)
    print(f"fuzz: {totals.inputs} inputs in {wall:.0f} s, {totals.defect_inputs} with a defect "
          f"({len(totals.signatures)} distinct): {dict(totals.classes)}; peak RSS max {totals.peak[0] / 2**20:.0f} MB; "
          f"wrote {args.results / 'fuzz.md'}", flush=True)
    return 1 if totals.defect_inputs else 0


if __name__ == "__main__":
    sys.exit(main())
