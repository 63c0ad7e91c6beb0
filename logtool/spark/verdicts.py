"""The audit's verdict per log dir: verify's (recovery/verdict.py), put together on the driver from the log
dirs the listing found and the partitions whose check tasks judged that they change it (the damaged few: a
healthy fleet sends back nothing)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from logtool.recovery.verdict import Judged, Verdict, unread
from logtool.spark.hosts import pinned
from logtool.spark.listing import Listing
from logtool.spark.rows import Broker, broker_of

SHOWN = 10  # verdicts the summary carries whole: those that would not start first, then the most cut


def fleet_verdicts(listings: list[Listing], judged: Iterable[tuple[str, Judged]]) -> list[dict]:
    """Per log dir, its verdict's dict with the columns every table has (rows.BROKER): those the PATHs name
    (their own files checked), then the parents of partition dirs given without their log dir."""
    by_dir: dict[str, tuple[Verdict, str, Broker]] = {}
    for listing in listings:
        for d in listing.report.log_dirs:
            by_dir.setdefault(str(Path(d.path)), (Verdict(d.path, True), listing.host, broker_of(d)))[0] \
                .add_log_dir_findings(d.findings)
        for log_dir in listing.targets.log_dirs():
            by_dir.setdefault(str(Path(log_dir)), (Verdict(log_dir, False), listing.host, (None, None)))
        not_read = unread(listing.path, listing.report.findings)
        if not_read is not None:  # a PATH whose host was lost before it was listed: nothing of it is known
            by_dir.setdefault(listing.path, (Verdict(listing.path, False, unplanned=[not_read]), listing.host,
                                             (None, None)))
    for log_dir, j in judged:
        by_dir[str(Path(log_dir))][0].add(j)
    return [_on_its_host(v.finish()).to_dict() | {"cluster_id": cluster, "node_id": node, "host": host}
            for v, host, (cluster, node) in by_dir.values()]


def _on_its_host(v: Verdict) -> Verdict:
    """A pinned log dir's next commands are run on its host, on its own paths (logtool takes no HOST:PATH
    outside the audit)."""
    host, _ = pinned(v.log_dir)
    if host is not None:
        v.next_steps = [f"on {host}: {step.replace(f'{host}:/', '/')}" for step in v.next_steps]
    return v


def verdict_summary(verdicts: list[dict]) -> dict:
    """The summary's part: counts over the fleet's log dirs, and the most troubled verdicts whole."""
    troubled = [v for v in verdicts if v["broker_starts"] is not True or v["recovery"] or v["starts_unrecovered"]
                or v["not_worked_out"]]
    first = {False: 0, None: 1, True: 2}  # would not start, cannot be told, would start
    troubled.sort(key=lambda v: (first[v["broker_starts"]], -v["recovery_bytes_cut"], v["log_dir"]))
    return {
        "log_dirs": len(verdicts),
        "would_not_start": sum(1 for v in verdicts if v["broker_starts"] is False),
        "start_unknown": sum(1 for v in verdicts if v["broker_starts"] is None),
        "partitions_cut": sum(len(v["recovery"]) for v in verdicts),
        "recovery_bytes_cut": sum(v["recovery_bytes_cut"] for v in verdicts),
        "recovery_valid_records_dropped": sum(v["recovery_valid_records_dropped"] for v in verdicts),
        "not_worked_out": sum(len(v["not_worked_out"]) for v in verdicts),
        "troubled": len(troubled),
        "first": troubled[:SHOWN],
    }
