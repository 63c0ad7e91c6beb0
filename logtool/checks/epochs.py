"""leader-epoch-checkpoint: Kafka's rules for reading it, and the file held against the log.

Kafka builds the leader-epoch cache from this file at load (`LeaderEpochFileCache`): every entry must
have a non-negative epoch and start offset, and a later entry must have a greater epoch and a start
offset not below the previous one. It then drops entries starting at or past the log end. The cache
says which epoch wrote each offset: the epoch of the last entry starting at or before it. The batches
carry the same fact in their partition leader epoch, stamped by the leader, so the two must agree.
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence

from logtool.findings import LEADER_EPOCH_BEYOND_LOG, LEADER_EPOCH_INVALID, LEADER_EPOCH_MISMATCH, Finding, finding
from logtool.rules.facts import PartitionFacts
from logtool.format.meta import MetaError, leader_epochs

NAME = "leader-epoch-checkpoint"
MAX_MISMATCHES = 5  # then a count: one damaged epoch field makes a run of identical complaints

EpochRun = tuple[int, int, int]  # (epoch, first offset, last offset) of consecutive batches of one epoch


def check_leader_epochs(text: str, runs: Sequence[EpochRun], facts: PartitionFacts) -> list[Finding]:
    try:
        epochs = leader_epochs(text)
    except MetaError as e:
        return [finding(LEADER_EPOCH_INVALID, str(e), NAME)]
    invalid = _invalid_entries(epochs)
    if invalid:
        return invalid  # comparing an unreadable or reordered cache with the log would only repeat it
    return _beyond_log(epochs, facts) + _against_batches(epochs, runs)


def _invalid_entries(epochs: Sequence[tuple[int, int]]) -> list[Finding]:
    out = [finding(LEADER_EPOCH_INVALID, f"entry (epoch {e}, start offset {o}) is negative; the broker fails to "
                   f"load the partition (Received invalid partition leader epoch entry)", NAME, offset=o)
           for e, o in epochs if e < 0 or o < 0]
    for (e1, o1), (e2, o2) in zip(epochs, epochs[1:]):
        if e2 <= e1 or o2 < o1:
            out.append(finding(LEADER_EPOCH_INVALID, f"entry (epoch {e2}, start offset {o2}) does not follow "
                               f"(epoch {e1}, start offset {o1})", NAME))
    return out


def _beyond_log(epochs: Sequence[tuple[int, int]], facts: PartitionFacts) -> list[Finding]:
    if not epochs or facts.log_end is None or epochs[-1][1] <= facts.log_end:
        return []
    beyond = [(e, o) for e, o in epochs if o > facts.log_end]
    listed = ", ".join(f"epoch {e} from offset {o}" for e, o in beyond)
    return [finding(LEADER_EPOCH_BEYOND_LOG, f"{listed}: past the log end offset {facts.log_end}", NAME,
                    offset=beyond[0][1])]


def _against_batches(epochs: Sequence[tuple[int, int]], runs: Sequence[EpochRun]) -> list[Finding]:
    if not runs:
        return []
    if not epochs:
        e, first, _ = runs[0]
        return [finding(LEADER_EPOCH_MISMATCH, f"the checkpoint holds no epoch, but batches from offset {first} "
                        f"carry epoch {e}", NAME, offset=first)]
    starts = [o for _, o in epochs]
    problems = [p for run in runs if (p := _run_problem(epochs, starts, run)) is not None]
    out = [finding(LEADER_EPOCH_MISMATCH, message, NAME, offset=offset)
           for offset, message in problems[:MAX_MISMATCHES]]
    if len(problems) > MAX_MISMATCHES:
        out.append(finding(LEADER_EPOCH_MISMATCH, f"... and {len(problems) - MAX_MISMATCHES} more runs of batches "
                           f"like the above", NAME))
    return out


def _run_problem(epochs: Sequence[tuple[int, int]], starts: list[int], run: EpochRun) -> tuple[int, str] | None:
    epoch, first, last = run
    # Offsets below the first entry were cut from the cache when the log start moved (truncateFromStart):
    # the cache says nothing about them.
    lo = max(first, starts[0])
    if lo > last:
        return None
    i = bisect.bisect_right(starts, lo) - 1
    cached, since = epochs[i]
    if cached != epoch:
        return lo, (f"batches at offsets {lo}..{last} carry epoch {epoch}, but the checkpoint gives epoch {cached} "
                    f"(from offset {since})")
    if i + 1 < len(epochs) and starts[i + 1] <= last:
        later, at = epochs[i + 1]
        return at, (f"the checkpoint starts epoch {later} at offset {at}, but batches up to offset {last} carry epoch "
                    f"{epoch}")
    return None
