"""`logtool txn` as text: one table per partition that has transactional producers."""
from __future__ import annotations

from rich.markup import escape

from logtool.render.table import Column, print_fitted
from logtool.render.text import console


def _duration(ms: int | None) -> str:
    if ms is None:
        return "-"
    if ms < 10_000:
        return f"{ms} ms"
    s = ms // 1000
    return f"{s} s" if s < 600 else f"{s // 60} min" if s < 36_000 else f"{s // 3600} h"


def render_txn(parts: list[dict], summary: dict, timeout_ms: int) -> None:
    out = console()
    columns = [Column("producer"), Column("open"), Column("committed", 1), Column("aborted", 1),
               Column("epoch", 4), Column("records c/a/o", 2), Column("duration min/mean/max", 3),
               Column("bytes", 5)]
    for p in parts:
        if not p["producers"]:
            continue
        name = f"{p['topic']}-{p['partition']}" if p["topic"] is not None else p["path"]
        out.print(f"[bold]{escape(name)}[/]")
        rows = []
        for r in p["producers"]:
            if r["open_since_offset"] is None:
                state = "-"
            elif r["hanging"]:
                state = f"[red]hanging since offset {r['open_since_offset']}[/] ({_duration(r['open_age_ms'])})"
            else:
                state = f"since offset {r['open_since_offset']}"
            rows.append([str(r["producer_id"]), state, str(r["committed"]), str(r["aborted"]), str(r["epoch"]),
                         f"{r['committed_records']}/{r['aborted_records']}/{r['open_records']}",
                         "/".join(_duration(r[k]) for k in ("duration_ms_min", "duration_ms_mean", "duration_ms_max")),
                         str(r["bytes"])])
        print_fitted(out, columns, rows)
        for note in p["notes"]:
            out.print(f"  [yellow]{escape(note)}[/]")
    out.print(f"{summary['partitions']} partition(s), {summary['producers']} transactional producer(s): "
              f"{summary['committed']} committed, {summary['aborted']} aborted, {summary['open']} open, "
              f"{summary['hanging']} hanging (open over {_duration(timeout_ms)})")
