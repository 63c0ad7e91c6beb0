"""The audit as one self-contained HTML page (`logtool report`): the fleet summary, whether the brokers
would start (the verdict), findings by severity,
code, host and topic, the worst partitions with their remedies, replica divergence, and bar charts where a
person would rather look than read (damaged bytes by host and by topic, damage by day).

Everything comes from the audit's summary.json; the page loads nothing (inline CSS and SVG, no script), so it
opens the same from a mail attachment, a ticket or an air-gapped host. Every number drawn from the summary
carries its field in `data-field` and its exact value in `data-value`, so a test (or a script) reads them
back without parsing the formatting.
"""
from __future__ import annotations

from html import escape

from logtool.findings import lookup

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;color:#1d1d1f;
padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
.meta{color:#666}.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}
.card{border:1px solid #ddd;border-radius:8px;padding:.6em 1em;min-width:8em}
.card b{display:block;font-size:1.5em}.error{color:#b00020}.warning{color:#a15c00}.info{color:#555}
table{border-collapse:collapse;width:100%;margin:.5em 0}th,td{text-align:left;padding:.3em .5em;
border-bottom:1px solid #eee;vertical-align:top}th{background:#f6f6f6}td.n{text-align:right;
font-variant-numeric:tabular-nums}.path{font-family:ui-monospace,monospace;font-size:.9em;word-break:break-all}
svg text{font:12px system-ui,sans-serif}.none{color:#888;font-style:italic}
.scroll{overflow-x:auto;max-width:100%}code{word-break:break-all}
"""
_TOPICS_SHOWN = 30
_BAR_WIDTH = 560


def _num(field: str, value) -> str:
    shown = "-" if value is None else f"{value:,}" if isinstance(value, int) else escape(str(value))
    return f'<span data-field="{escape(field)}" data-value="{escape(str(value))}">{shown}</span>'


def _cell(field: str, value) -> str:
    return f'<td class="n">{_num(field, value)}</td>'


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} TB"


def _bars(title: str, rows: list[tuple[str, int]], label=_bytes) -> str:
    """A horizontal bar chart as inline SVG; nothing when every value is 0."""
    rows = [(name, v) for name, v in rows if v]
    if not rows:
        return f'<p class="none">{escape(title)}: none.</p>'
    top = max(v for _, v in rows)
    height = 22 * len(rows) + 10
    parts = [f'<svg role="img" aria-label="{escape(title)}" width="100%" viewBox="0 0 900 {height}">']
    for i, (name, v) in enumerate(rows):
        y = 5 + 22 * i
        w = max(2, round(_BAR_WIDTH * v / top))
        parts.append(f'<text x="200" y="{y + 14}" text-anchor="end">{escape(name[:40])}</text>'
                     f'<rect x="210" y="{y}" width="{w}" height="16" fill="#c0392b"><title>{escape(name)}: '
                     f'{escape(label(v))}</title></rect><text x="{216 + w}" y="{y + 14}">{escape(label(v))}</text>')
    parts.append("</svg>")
    return f"<h3>{escape(title)}</h3>" + "".join(parts)


def _table(headers: list[str], rows: list[str], empty: str) -> str:
    if not rows:
        return f'<p class="none">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    # A narrow window scrolls the table, never the page: its long paths also break anywhere (class "path").
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'



def _sev(severity: str) -> str:
    return f'<span class="{escape(severity)}">{escape(severity)}</span>'


def _verdict(v: dict | None) -> list[str]:
    """Would the brokers start, and what would their recovery cut: the counts, then the most troubled log
    dirs with their blockers and the commands to run next."""
    out = ["<h2>Would the brokers start?</h2>"]
    if v is None:
        return out + ['<p class="none">Not in this summary (written by an older logtool).</p>']
    untold = (f' ({_num("verdict.start_unknown", v["start_unknown"])} cannot be told: not read)'
              if v.get("start_unknown") else "")  # (a summary of schema 2 has no such count)
    out.append(f'<p>Of {_num("verdict.log_dirs", v["log_dirs"])} log dir(s), '
               f'{_num("verdict.would_not_start", v["would_not_start"])} would not start{untold}; Kafka\'s recovery '
               f'would cut '
               f'{_num("verdict.recovery_bytes_cut", v["recovery_bytes_cut"])} bytes of '
               f'{_num("verdict.partitions_cut", v["partitions_cut"])} partition(s) and drop '
               f'{_num("verdict.recovery_valid_records_dropped", v["recovery_valid_records_dropped"])} valid '
               f'record(s) as written.</p>')
    rows = []
    starts = {True: "yes", False: "<span class=error>no</span>", None: "<span class=warning>unknown</span>"}
    for d in v["first"]:
        blockers = "<br>".join([*(f'{escape(b["code"])} {escape(b["name"])} {escape(b["file"] or b["dir"])}: '
                                  f'{escape(b["fix"])}' for b in d["blockers"]),
                                *(f'{escape(x["partition"])}: {escape(x["why"])}' for x in d["not_worked_out"]
                                  if d["broker_starts"] is None)])
        steps = "<br>".join(f"<code>{escape(step)}</code>" for step in d["next"])
        rows.append(f'<tr><td class="path">{escape(d["log_dir"])}</td><td>{escape(str(d["host"]))}</td>'
                    f'<td>{starts[d["broker_starts"]]}</td><td>{blockers}</td>'
                    f'{_cell("verdict.first.recovery_bytes_cut", d["recovery_bytes_cut"])}'
                    f'{_cell("verdict.first.recovery_valid_records_dropped", d["recovery_valid_records_dropped"])}'
                    f'<td class="path">{steps}</td></tr>')
    out.append(_table(["log dir", "host", "starts", "what stops it, and the fix", "bytes cut",
                       "valid records dropped", "next"], rows, "Every broker would start, and lose nothing."))
    if v["troubled"] > len(v["first"]):
        out.append(f'<p class="meta">The {len(v["first"])} most troubled of {v["troubled"]} log dirs: the rest '
                   f'are in the verdicts table.</p>')
    return out


def _by_broker(brokers: list[dict] | None) -> list[str]:
    """Per broker (cluster id, node id, host): its partitions, findings and damaged bytes."""
    out = ["<h2>By broker</h2>"]
    if brokers is None:
        return out + ['<p class="none">Not in this summary (written by an older logtool).</p>']
    rows = [f'<tr><td class="path">{escape(str(b["cluster_id"] or "-"))}</td>'
            f'<td>{escape("-" if b["node_id"] is None else str(b["node_id"]))}</td>'
            f'<td class="path">{escape(str(b["host"]))}</td>{_cell("by_broker.partitions", b["partitions"])}'
            f'{_cell("by_broker.errors", b["errors"])}{_cell("by_broker.warnings", b["warnings"])}'
            f'{_cell("by_broker.infos", b["infos"])}{_cell("by_broker.damaged_bytes", b["damaged_bytes"])}</tr>'
            for b in brokers]
    out.append(_table(["cluster id", "node id", "host", "partitions", "errors", "warnings", "infos",
                       "damaged bytes"], rows, "No broker to show."))
    out.append(_bars("Damaged bytes by broker", [(f'node {b["node_id"]} ({b["host"]})', b["damaged_bytes"])
                                                for b in brokers]))
    return out


def html_report(s: dict) -> str:
    """The page for an audit's summary (the dict summary.json holds)."""
    secs = s.get("seconds") or {}
    cards = "".join(f'<div class="card"><b>{_num(key, s.get(key))}</b>{escape(label)}</div>' for key, label in (
        ("partitions", "partitions"), ("segments", "segments"), ("bytes", "bytes"), ("batches", "batches"),
        ("records", "records (--deep)"), ("errors", "errors"), ("warnings", "warnings"), ("infos", "infos"),
        ("exit_code", "exit code")))
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>logtool audit</title>"
           f"<style>{_CSS}</style></head><body>",
           "<h1>logtool audit</h1>",
           f'<p class="meta">{len(s.get("paths") or [])} path(s) on {escape(str(s.get("master")))}, '
           f'{_num("tasks", s.get("tasks"))} task(s); listing {_num("seconds.listing", secs.get("listing"))} s, '
           f'checks {_num("seconds.check", secs.get("check"))} s, tables {_num("seconds.output", secs.get("output"))}'
           f' s; output {escape(str(s.get("output")))}</p>',
           f'<div class="cards">{cards}</div>']
    out += _verdict(s.get("verdict"))

    out.append("<h2>Findings by code</h2>")
    rows = []
    for r in s.get("by_code") or []:
        kind = lookup(r["code"])
        rows.append(f'<tr><td>{escape(r["code"])}</td><td>{escape(r["name"])}</td><td>{_sev(r["severity"])}</td>'
                    f'{_cell("by_code.count", r["count"])}<td>{escape(kind.meaning) if kind else ""}</td>'
                    f'<td>{escape(kind.remedy) if kind else ""}</td></tr>')
    out.append(_table(["code", "name", "severity", "count", "meaning", "remedy"], rows, "No findings."))

    out.append("<h2>Worst partitions</h2>")
    rows = []
    for r in s.get("worst_partitions") or []:
        worst = r.get("worst_finding") or ""
        kind = lookup(worst.split(" ")[0]) if worst else None
        rows.append(f'<tr><td class="path">{escape(r["path"])}</td><td>{escape(str(r["host"]))}</td>'
                    f'{_cell("worst.errors", r["errors"])}{_cell("worst.warnings", r["warnings"])}'
                    f'<td>{escape(worst)}</td><td>{escape(kind.remedy) if kind else ""}</td></tr>')
    out.append(_table(["partition", "host", "errors", "warnings", "worst finding", "remedy"], rows,
                      "No partition has an error or a warning."))

    out += _by_broker(s.get("by_broker"))

    for key, title in (("by_host", "host"), ("by_topic", "topic")):
        breakdown = s.get(key) or []
        shown = breakdown if key == "by_host" else breakdown[:_TOPICS_SHOWN]
        out.append(f"<h2>By {title}</h2>")
        rows = [f'<tr><td class="path">{escape(str(r[title]))}</td>{_cell(f"{key}.errors", r["errors"])}'
                f'{_cell(f"{key}.warnings", r["warnings"])}{_cell(f"{key}.infos", r["infos"])}'
                f'{_cell(f"{key}.damaged_bytes", r["damaged_bytes"])}</tr>' for r in shown]
        out.append(_table([title, "errors", "warnings", "infos", "damaged bytes"], rows, f"No {title} to show."))
        if len(breakdown) > len(shown):
            out.append(f'<p class="meta">The {len(shown)} most troubled of {len(breakdown)} topics.</p>')
        out.append(_bars(f"Damaged bytes by {title} (past the valid prefix, cut by Kafka's recovery)",
                         [(str(r[title]), r["damaged_bytes"]) for r in shown]))

    out.append("<h2>When the damage was written</h2>")
    days = s.get("damage_by_day") or []
    out.append('<p class="meta">Damaged partitions by the UTC day of the last record before their damage.</p>')
    out.append(_bars("Damaged partitions by day", [(d["day"], d["partitions"]) for d in days],
                     label=lambda n: f"{n:,} partition(s)"))

    out.append("<h2>Replicas</h2>")
    d = s.get("divergence")
    if d is None:
        out.append('<p class="none">Not compared (the audit ran without --replicas).</p>')
    else:
        out.append(f'<p>{_num("divergence.shared_partitions", d["shared_partitions"])} partition(s) on more than '
                   f'one log dir; {_num("divergence.diverging", d["diverging"])} diverging.</p>')
        rows = [f'<tr><td>{escape(str(r["topic"]))}-{escape(str(r["partition"]))}</td><td>{escape(str(r["kind"]))}'
                f'</td>{_cell("divergence.first_divergent_offset", r["first_divergent_offset"])}<td class="path">'
                f'{escape(", ".join(r["affected"]))}</td><td class="path">{escape(str(r["detail"]))}</td></tr>'
                for r in d["first"]]
        out.append(_table(["partition", "kind", "first divergent offset", "affected", "detail"], rows,
                          "The replicas agree."))
    out.append("</body></html>\n")
    return "\n".join(out)
