"""The audit's summary for people: totals and speed, findings by severity and code, the worst partitions,
replica divergence, and where the tables are."""
from __future__ import annotations

from rich.markup import escape

from logtool.render.table import Column, print_fitted
from logtool.render.text import Screen, console
from logtool.render.emit import Result
from logtool.render.verdict import verdict_lines

_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


def _per_second(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.2g}"  # a slow rate keeps two digits, never reads 0


def _verdicts(out: Screen, v: dict) -> None:
    """The fleet's verdict in one line, then the most troubled log dirs' verdicts as verify says them."""
    unknown = f"; for {v['not_worked_out']} partition(s) it cannot be worked out" if v["not_worked_out"] else ""
    style = "bold red" if v["would_not_start"] else "bold yellow" if v["troubled"] else "bold green"
    untold = f" ({v['start_unknown']} cannot be told: not read)" if v.get("start_unknown") else ""
    out.print(f"[{style}]verdict[/]: of {v['log_dirs']} log dir(s), {v['would_not_start']} would not start{untold}; "
              f"recovery would cut {v['recovery_bytes_cut']} bytes of {v['partitions_cut']} partition(s) and drop "
              f"{v['recovery_valid_records_dropped']} valid record(s) as written{unknown}")
    for verdict in v["first"]:
        for line in verdict_lines(verdict):
            out.print(line)
    if v["troubled"] > len(v["first"]):
        out.print(f"... and {v['troubled'] - len(v['first'])} more log dir(s) in the verdicts table")


def render_audit(result: Result) -> None:
    """`result`: the audit's (spark/summary.py's Audited, of a layer above this one)."""
    out, s = console(), result.to_dict()
    secs = s["seconds"]
    rate = f"{s['bytes'] / 1e6 / secs['check']:,.1f} MB/s, {_per_second(s['partitions'] / secs['check'])} " \
        f"partitions/s" if secs["check"] else "-"
    startup = f"; Spark start-up {secs['startup']} s" if secs["startup"] is not None else ""
    out.print(f"[bold]audit[/] of {len(s['paths'])} path(s) on {escape(s['master'])}: {s['partitions']} partition(s), "
              f"{s['segments']} segment(s), {s['bytes']} bytes, {s['batches']} batches in {s['tasks']} task(s)")
    out.print(f"  listing {secs['listing']} s, checks {secs['check']} s ({rate}), tables {secs['output']} s{startup}")
    out.print(f"[bold]{s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info[/]")
    if s["by_code"]:
        print_fitted(out, [Column("code"), Column("name"), Column("severity", 1), Column("count")],
                     [[r["code"], r["name"], f"[{_STYLE[r['severity']]}]{r['severity']}[/]", str(r["count"])]
                      for r in s["by_code"]])
    if s["worst_partitions"]:
        out.print("[bold]worst partitions[/]")
        print_fitted(out, [Column("path"), Column("host", 4), Column("errors", 1), Column("warnings", 2),
                           Column("worst finding", 3)],
                     [[escape(r["path"]), escape(r["host"]), str(r["errors"]), str(r["warnings"]),
                       escape(r["worst_finding"] or "-")] for r in s["worst_partitions"]])
    _verdicts(out, s["verdict"])
    d = s["divergence"]
    if d is not None:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(d["by_kind"].items())) or "none"
        out.print(f"[bold]replicas[/]: {d['shared_partitions']} partition(s) on more than one log dir, "
                  f"{d['diverging']} diverge ({kinds})")
        if d["first"]:
            print_fitted(out, [Column("partition"), Column("kind"), Column("first divergent offset", 1),
                               Column("affected", 2)],
                         [[escape(f"{r['topic']}-{r['partition']}"), r["kind"], str(r["first_divergent_offset"]),
                           escape(", ".join(r["affected"]))] for r in d["first"]])
    tables = "findings, partitions, verdicts" + (", divergence" if d is not None else "")
    out.print(f"wrote {escape(s['output'])}: {tables} (Parquet) and summary.json")
