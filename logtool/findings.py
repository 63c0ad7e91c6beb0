"""The finding catalog: the vocabulary of the whole tool, like a file-system checker's problem table.

Every kind of problem has a stable code and name, a severity, a sentence a person understands and the
remedy, and, as data, the group it belongs to, whether Kafka's recovery cuts the log at it, the repair that
answers it and how many of it one file reports. Text, JSON, the Spark table, `verify --explain` and the
repair planner all speak in these names. Codes never change meaning; a retired kind keeps its code reserved.

This module is a leaf: it imports nothing of logtool, so every layer may use it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntEnum


class Severity(IntEnum):
    INFO = 0  # a normal state worth knowing
    WARNING = 1  # the broker copes, but something is wrong
    ERROR = 2  # data is damaged or would be dropped

    def __str__(self) -> str:
        return self.name.lower()


class Group(Enum):
    """Where a kind is found; the hundreds of its code say the same (LT1xx framing ... LT5xx log dir, LT7xx
    the log dir held against the KRaft metadata)."""

    FRAMING = "framing"
    RECORDS = "records"
    INDEX = "index"
    PARTITION = "partition"
    LOG_DIR = "log_dir"
    PRODUCERS = "producers"
    METADATA = "metadata"


_GROUP_OF_CODE = {"1": Group.FRAMING, "2": Group.RECORDS, "3": Group.INDEX, "4": Group.PARTITION, "5": Group.LOG_DIR,
                  "6": Group.PRODUCERS, "7": Group.METADATA}


class Fix(Enum):
    """The repair that answers a kind: the truncate planner dispatches on it."""

    TRUNCATE = "truncate"  # cut the log where Kafka's recovery cuts it
    TRUNCATE_STRICT = "truncate --strict"  # damage Kafka does not notice: cut only when asked
    REBUILD_INDEXES = "rebuild indexes"
    LEFTOVER = "handle leftover"  # finish or discard an interrupted delete/clean/swap as the loader does
    LEADER_EPOCHS = "drop leader-epoch entries"
    SNAPSHOTS = "remove producer snapshot"
    CHECKPOINTS = "correct checkpoint entry"
    MOVE_OUT = "move out of the log dir"  # a directory the broker refuses, into the quarantine
    META_PROPERTIES = "rebuild meta.properties"  # from the broker's other log dirs, where they agree


class AtStart(Enum):
    """What a kind does to the broker's next start (the verdict reads it): most kinds it copes with."""

    REFUSES = "the broker refuses to start"  # a fatal error while loading the log dirs
    LOG_DIR_OFFLINE = "the broker takes the log dir offline (and stops if it has no other)"


# How many findings of one kind one file reports before the rest are counted in one line: per-entry and
# per-record kinds can number in the millions on one damaged file.
_CAP_OF_GROUP = {Group.FRAMING: 20, Group.RECORDS: 5, Group.INDEX: 5, Group.PRODUCERS: 5}
_COUNTED_AS = {Group.RECORDS: "records", Group.INDEX: "entries"}


@dataclass(slots=True, frozen=True)
class Kind:
    code: str
    name: str
    severity: Severity
    meaning: str
    remedy: str
    cuts: bool = False  # Kafka's recovery ends the segment's valid prefix here
    fix: Fix | None = None
    at_start: AtStart | None = None  # what it does to the broker's next start, when that is not to cope
    operational: bool = False  # logtool could not look (nothing read, nothing known): the run failed, not the log
    index_scope: bool = False  # `index verify` shows it: the index group, and what stops reading an index

    @property
    def group(self) -> Group:
        return _GROUP_OF_CODE[self.code[2]]

    @property
    def cap(self) -> int | None:
        """Findings of this kind one file reports in full; None: all of them."""
        return None if self.cuts else _CAP_OF_GROUP.get(self.group)

    def __reduce__(self) -> tuple[Callable[[str], "Kind"], tuple[str]]:
        # Unpickled as the catalog's own object (an audit pickles findings between executors and the driver),
        # so that `finding.kind is NOT_AUDITED` holds wherever the finding was made.
        return kind, (self.name,)


@dataclass(slots=True, frozen=True)
class Finding:
    kind: Kind
    message: str
    file: str | None = None
    position: int | None = None
    offset: int | None = None
    more: int = 0  # a cap's closing line: how many more of this kind and file were left out

    @property
    def code(self) -> str:
        return self.kind.code

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def severity(self) -> Severity:
        return self.kind.severity

    def to_dict(self) -> dict:
        return {"code": self.code, "name": self.name, "severity": str(self.severity), "file": self.file,
                "position": self.position, "offset": self.offset, "message": self.message}


class _Walked:
    """Which batch of a walk the checks are looking at (`at`, its position; -1 before the walk), and that of
    each finding when it was added: shared by a sink and its views for other files."""

    __slots__ = ("at", "tags")

    def __init__(self) -> None:
        self.at = -1
        self.tags: list[int] = []


class Sink:
    """Where checks put findings: it applies each kind's cap per file, and `done` adds one line per capped
    kind and file counting what was left out. `file` is the file findings name unless `add` names another.

    `done` lists findings in the order of the batches they were found at (`at`, which the walk's lenses set
    as they go), and in the order they came for one batch: a lens fed a run of batches at once
    (`feed_many`) reports in the same order as lenses fed one batch after the other, so the compiled
    kernel's runs and the reference's single batches give one report."""

    __slots__ = ("file", "findings", "_counts", "walked")

    def __init__(self, file: str | None = None) -> None:
        self.file = file
        self.findings: list[Finding] = []
        # per (kind, file) with a cap: how many were added, and the batch the first was found at
        self._counts: dict[tuple[str, str | None], tuple[int, int]] = {}
        self.walked = _Walked()

    def add(self, kind: Kind | str, message: str, position: int | None = None, offset: int | None = None,
            file: str | None = None) -> None:
        if isinstance(kind, str):
            kind = BY_NAME[kind]
        name = kind.name
        file = file if file is not None else self.file
        if kind.cap is not None:
            key = (name, file)
            n, first_at = self._counts.get(key, (0, self.walked.at))
            self._counts[key] = (n + 1, first_at)
            if n >= kind.cap:
                return
        self.append(Finding(kind, message, file, position, offset))

    def append(self, f: Finding) -> None:
        """A finding made elsewhere (no cap applies), at the batch the checks are looking at."""
        self.findings.append(f)
        self.walked.tags.append(self.walked.at)

    def for_file(self, file: str) -> "Sink":
        """The same sink (one list, one count per kind and file) with another default file."""
        view = Sink(file)
        view.findings, view._counts, view.walked = self.findings, self._counts, self.walked
        return view

    def done(self) -> list[Finding]:
        tags = self.walked.tags
        if len(tags) > 1 and tags != sorted(tags):  # (most walks report nothing: no sort for them)
            order = sorted(range(len(self.findings)), key=tags.__getitem__)
            self.findings[:] = [self.findings[i] for i in order]
        # The lines counting what was left out follow the findings, in the order of the batches each kind was
        # first found at (as the findings are: not the order the lenses happened to count them in).
        counted = sorted(self._counts.items(), key=lambda kv: kv[1][1]) if len(self._counts) > 1 else self._counts.items()
        for (name, file), (n, _) in counted:
            kind = BY_NAME[name]
            cap = kind.cap  # never None here: `add` counts only the kinds that have one
            if cap is not None and n > cap:
                what = _COUNTED_AS.get(kind.group, "findings")
                self.findings.append(Finding(kind, f"... and {n - cap} more {what} like the above", file,
                                             more=n - cap))
        self._counts.clear()
        return self.findings


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
_TRUNCATES = "Kafka's recovery cuts the segment here, and deletes every later segment of the partition"
_REPAIR = "Run `logtool truncate` to cut the segment as Kafka would, keeping the removed bytes in quarantine; " \
          "use `logtool dump --salvage` first to rescue records that follow the damage."

# One kind a line, bound to its name: code names a kind as `findings.UNREADABLE`, so a typo fails at import.
# -- segment framing: each ends the valid prefix where Kafka's recovery would
CRC_MISMATCH = Kind("LT101", "CRC_MISMATCH", E, f"A batch's stored checksum does not match its bytes: its data changed after it was written. {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
TORN_BATCH = Kind("LT102", "TORN_BATCH", E, f"The last batch declares more bytes than the file holds: a write was cut short (crash or full disk). {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
PREALLOCATED_TAIL = Kind("LT103", "PREALLOCATED_TAIL", W, "The active segment ends in zero bytes, as a broker with log.preallocate=true or a crash mid-write leaves it. Kafka's recovery cuts the zeros; no record is lost.", "Nothing is lost; the broker trims it at its next start, or run `logtool truncate`.", cuts=True, fix=Fix.TRUNCATE)
ZERO_TAIL = Kind("LT104", "ZERO_TAIL", E, f"A segment that is not the active one ends in zero bytes where batches should be. {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
SHORT_TAIL = Kind("LT105", "SHORT_TAIL", E, f"A few bytes follow the last batch, too few to hold a batch header. {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
BAD_LENGTH = Kind("LT106", "BAD_LENGTH", E, f"A batch length field is negative or smaller than any batch can be: the bytes here are not a batch. {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
GARBAGE = Kind("LT107", "GARBAGE", E, f"The bytes after the last good batch do not start a batch (unknown magic, length past the end of the file). {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
IMPOSSIBLE_LENGTH = Kind("LT108", "IMPOSSIBLE_LENGTH", E, f"A batch length field is so large that the batch would end past the 2 GiB limit of any segment. {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
BATCH_TOO_SMALL = Kind("LT109", "BATCH_TOO_SMALL", E, f"A v2 batch is shorter than the 61-byte batch header. {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
BAD_TXN_MARKER = Kind("LT110", "BAD_TXN_MARKER", E, f"A producer's control batch does not hold a readable commit/abort marker; recovery replays producer state and fails on it. {_TRUNCATES}.", _REPAIR, cuts=True, fix=Fix.TRUNCATE)
OFFSET_NOT_INCREASING = Kind("LT111", "OFFSET_NOT_INCREASING", E, "A batch's offsets do not follow the previous batch's: the offset field was damaged (the v2 checksum does not cover it), so Kafka's recovery does not notice and the log end offset can move backwards.", "Dump the surrounding batches with `logtool dump`; the damaged batch must be removed or re-produced by hand. Kafka will not fix it.", fix=Fix.TRUNCATE_STRICT)
OFFSET_OVERFLOW = Kind("LT112", "OFFSET_OVERFLOW", E, "A batch's offset does not fit the segment's 32-bit relative offsets; the broker would have to split the segment at load (KAFKA-6264).", "Let the broker split the segment at load, or move the batch to a segment of its own.")
FIRST_OFFSET_BELOW_NAME = Kind("LT113", "FIRST_OFFSET_BELOW_NAME", E, "The first batch of a segment has an offset below the base offset in the file name; index lookups and recovery will misbehave.", "Rename the segment and its indexes after its first offset, or rebuild them with `logtool index rebuild`.")
FIRST_OFFSET_ABOVE_NAME = Kind("LT114", "FIRST_OFFSET_ABOVE_NAME", I, "The first batch starts after the offset in the file name, as compaction leaves it.", "Nothing to do.")
UNKNOWN_MAGIC = Kind("LT115", "UNKNOWN_MAGIC", E, "A batch carries a magic byte above 2, which no Kafka writes (a negative one is read as an old-format message, as Kafka reads it). Kafka's recovery still keeps it if its checksum matches; consumers cannot read it.", "Inspect with `logtool dump`; the batch was probably damaged before its checksum was computed.")
UNKNOWN_CODEC = Kind("LT116", "UNKNOWN_CODEC", E, "A batch names a compression codec that does not exist (ids 5-7); consumers cannot read it.", "Inspect with `logtool dump`.")
LATER_SEGMENTS_DROPPED = Kind("LT117", "LATER_SEGMENTS_DROPPED", E, "Damage in a segment that is not the last one: Kafka's recovery (from a recovery point at or before it) would delete every later segment, good data included.", "Do not let the broker recover this blindly: rescue the later segments' records first (`logtool dump`), then repair with `logtool truncate`.", fix=Fix.TRUNCATE)
SEGMENT_TOO_LARGE = Kind("LT118", "SEGMENT_TOO_LARGE", E, "The segment is 2 GiB or larger; Kafka refuses to load it.", "Split the segment or move it out of the log dir.", at_start=AtStart.REFUSES)
EMPTY_SEGMENT = Kind("LT119", "EMPTY_SEGMENT", I, "The segment holds no bytes, as right after a roll.", "Nothing to do.")
LEGACY_WRAPPER_UNREADABLE = Kind("LT120", "LEGACY_WRAPPER_UNREADABLE", E, "A compressed v0/v1 wrapper message cannot be decompressed, so its inner messages and first offset are unknown. Kafka's recovery does not notice; consumers fail on it.", "Inspect with `logtool dump --salvage`.")
TAIL_BEING_WRITTEN = Kind("LT121", "TAIL_BEING_WRITTEN", I, "The last segment of a partition whose broker is running ended in a batch that was still being written: the file grew or changed while logtool read it. This is a live log, not damage.", "Nothing to do. To check the tail itself, run logtool on a copy taken while the broker is stopped.")
FILE_SHRANK_WHILE_READ = Kind("LT122", "FILE_SHRANK_WHILE_READ", W, "Another process cut the file short while logtool read it (a follower truncating its log to the leader's, retention or cleaning on a running broker, a hand edit): what lay past the cut was gone before it could be read. Not damage in itself.", "Run logtool again; on a running broker this is its normal work. To examine a moment in time, copy the log dir first (a snapshot of the volume).", index_scope=True)
RECOVERY_FAILS = Kind("LT123", "RECOVERY_FAILS", E, "A producer's control batch that Kafka cannot even open (a compression codec that does not exist, or a payload that does not decompress). Recovery replays producer state through it, meets an exception it does not handle, and the broker fails to load the partition: its log dir goes offline. The valid log ends here.", "Before starting the broker, repair with `logtool truncate` (it cuts the log here); rescue the records after it with `logtool dump --salvage` first.", cuts=True, fix=Fix.TRUNCATE, at_start=AtStart.LOG_DIR_OFFLINE)
# -- records, checked with --deep
RECORDS_UNREADABLE = Kind("LT201", "RECORDS_UNREADABLE", E, "The records of a batch cannot be decoded (decompression or record framing failed), though its checksum matches.", "Consumers fail on this batch. Inspect with `logtool dump`; the producer wrote it damaged.")
RECORD_COUNT_MISMATCH = Kind("LT202", "RECORD_COUNT_MISMATCH", E, "A batch holds a different number of records than its header says, or more than its offset range allows.", "Consumers fail on this batch. Inspect with `logtool dump`.")
OFFSET_DELTA_INVALID = Kind("LT203", "OFFSET_DELTA_INVALID", E, "Record offsets inside a batch do not increase, or pass the batch's last offset.", "Inspect with `logtool dump`.")
TIMESTAMP_ABOVE_MAX = Kind("LT204", "TIMESTAMP_ABOVE_MAX", W, "A record's timestamp is above the batch's max timestamp, so time lookups can miss it.", "Rebuild time indexes with `logtool index rebuild`; re-produce the data if exact time search matters.")
CONTROL_RECORD_INVALID = Kind("LT205", "CONTROL_RECORD_INVALID", E, "A control batch holds a record that is not a valid control record.", "Inspect with `logtool dump`.")
INNER_CRC_MISMATCH = Kind("LT206", "INNER_CRC_MISMATCH", E, "A message inside a compressed v0/v1 wrapper fails its own checksum.", "Inspect with `logtool dump`.")
# -- indexes
INDEX_MISSING = Kind("LT301", "INDEX_MISSING", W, "A segment has no .index file; the broker must rebuild it at load, and lookups scan the log until then.", "Run `logtool index rebuild --apply`, or let the broker rebuild it.", fix=Fix.REBUILD_INDEXES, index_scope=True)
TIMEINDEX_MISSING = Kind("LT302", "TIMEINDEX_MISSING", E, "A segment has no .timeindex; the broker recreates it empty and does not rebuild it (unless it recovers the segment), so time lookups in it fail.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
INDEX_CORRUPT = Kind("LT303", "INDEX_CORRUPT", E, "An index file fails Kafka's own sanity check (a size that is not a whole number of entries, or a last entry below the base offset).", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
INDEX_NOT_INCREASING = Kind("LT304", "INDEX_NOT_INCREASING", E, "Index entries do not strictly increase; Kafka's binary search will give wrong answers.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
INDEX_WRONG_POSITION = Kind("LT305", "INDEX_WRONG_POSITION", E, "An offset-index entry does not point at the start of a batch, or names an offset that batch does not hold: consumers fetching near it read from the wrong place. Kafka does not check this.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
INDEX_BEYOND_LOG = Kind("LT306", "INDEX_BEYOND_LOG", W, "Index entries point past the valid end of the log, into its damaged tail. The recovery that cuts the tail rebuilds the indexes, so the broker heals this itself once it recovers the segment.", "Run `logtool truncate`, which cuts the tail and rebuilds the indexes, or `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
INDEX_PREALLOCATED = Kind("LT307", "INDEX_PREALLOCATED", I, "The active segment's index is still at its preallocated size with zero slots at the end, as while a broker runs or after a crash.", "Nothing to do; the broker trims it at roll or shutdown.", index_scope=True)
INDEX_PREALLOCATED_CLOSED = Kind("LT308", "INDEX_PREALLOCATED_CLOSED", W, "A closed segment's index still has preallocated zero slots; it was never trimmed.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
TIMEINDEX_CORRUPT = Kind("LT309", "TIMEINDEX_CORRUPT", E, "A time index fails Kafka's sanity check (size not a multiple of 12, last timestamp below the first, or last offset below the base).", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
TIMEINDEX_WRONG_ENTRY = Kind("LT310", "TIMEINDEX_WRONG_ENTRY", E, "A time-index entry does not match the log: no batch ends at its offset, or the timestamp is not the largest seen up to it.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
TXNINDEX_CORRUPT = Kind("LT311", "TXNINDEX_CORRUPT", E, "The transaction index has an unknown version or an aborted transaction ending below the segment's base offset; the broker recovers the segment at load.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
TXNINDEX_MISMATCH = Kind("LT312", "TXNINDEX_MISMATCH", E, "The transaction index does not list exactly the aborted transactions the log holds: read_committed consumers would deliver aborted records, or hide committed ones.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
INDEX_PAST_LOG_END = Kind("LT313", "INDEX_PAST_LOG_END", E, "Index entries point past the end of a log that is whole: nothing rebuilds them (a segment below the recovery point is loaded with its indexes as they are), and a fetch or time lookup that lands on them reads nothing.", "Run `logtool index rebuild --apply`.", fix=Fix.REBUILD_INDEXES, index_scope=True)
# -- the partition directory
LEFTOVER_FILE = Kind("LT401", "LEFTOVER_FILE", W, "A file left behind by an interrupted delete, clean or segment swap (.deleted, .cleaned, .swap). The broker finishes or discards it at load.", "Usually nothing: the broker deals with it. A .swap is applied at load: check it is whole first.", fix=Fix.LEFTOVER)
ORPHAN_INDEX = Kind("LT402", "ORPHAN_INDEX", W, "An index file whose .log is missing; the broker deletes it at load.", "Find out where the .log went (was it deleted by hand?).", index_scope=True)
PARTITION_METADATA_INVALID = Kind("LT403", "PARTITION_METADATA_INVALID", E, "partition.metadata cannot be read; the broker fails to load the partition.", "Restore it from a replica (the topic id is the same on every replica).", at_start=AtStart.REFUSES)
LEADER_EPOCH_INVALID = Kind("LT404", "LEADER_EPOCH_INVALID", E, "leader-epoch-checkpoint cannot be read, holds a negative epoch or start offset (the broker fails to load the partition), or its epochs or start offsets do not increase.", "Restore it from an in-sync replica (epochs are the same on every replica). Deleting it makes the broker rebuild it only from the segments it recovers at the next start.")
SEGMENT_OVERLAP = Kind("LT405", "SEGMENT_OVERLAP", E, "A segment's base offset is not above the previous segment's last offset: two segments claim the same offsets.", "Find which copy is right with `logtool dump`, and move the other out of the log dir.")
SEGMENT_GAP = Kind("LT406", "SEGMENT_GAP", I, "Offsets jump between one segment's last batch and the next segment, as compaction or retention leaves them.", "Nothing to do.")
UNKNOWN_FILE = Kind("LT407", "UNKNOWN_FILE", I, "A file the broker does not use lies in the directory.", "Nothing to do; it is ignored by the broker.")
BAD_SEGMENT_NAME = Kind("LT408", "BAD_SEGMENT_NAME", E, "A file named like a segment file has a name the broker cannot parse; loading throws.", "Rename or remove the file.", at_start=AtStart.REFUSES)
PRODUCER_SNAPSHOT_INVALID = Kind("LT409", "PRODUCER_SNAPSHOT_INVALID", W, "A producer-state snapshot cannot be read; the broker rebuilds producer state from the log.", "Nothing urgent; the broker ignores it.")
PRODUCER_SNAPSHOT_BEYOND_LOG = Kind("LT410", "PRODUCER_SNAPSHOT_BEYOND_LOG", W, "A producer-state snapshot was taken at an offset past the log end: records written after it are missing from this log (cut by recovery or by hand, or the copy caught the broker mid-write). Kafka deletes the snapshot at load (unless the topic is still on a pre-0.11 message format) and rebuilds producer state from the log.", "Compare with another replica to see which records are missing here; idempotent producers may get sequence errors from this replica.", fix=Fix.SNAPSHOTS)
LEADER_EPOCH_BEYOND_LOG = Kind("LT411", "LEADER_EPOCH_BEYOND_LOG", W, "leader-epoch-checkpoint has an epoch starting past the log end: a leader wrote records that this log no longer holds. The broker drops the entry at load.", "Compare with another replica to see which records are missing here.", fix=Fix.LEADER_EPOCHS)
LEADER_EPOCH_MISMATCH = Kind("LT412", "LEADER_EPOCH_MISMATCH", W, "The leader epochs stamped in the batches disagree with leader-epoch-checkpoint (a batch's epoch is not the one the checkpoint gives its offset, or epochs go backwards in the log). The epoch field is outside the batch checksum, so such damage is otherwise silent; after a leader change, followers use these epochs to decide where to truncate and may cut or keep the wrong records.", "Compare with an in-sync replica (`logtool verify` there): take its leader-epoch-checkpoint (epochs are the same on every replica), or let this replica be rebuilt from the leader.")
PARTITION_DIR_DELETE = Kind("LT413", "PARTITION_DIR_DELETE", I, "A partition directory renamed <topic>-<n>.<id>-delete: the topic or this replica was deleted. The broker does not recover it and deletes it after file.delete.delay.ms.", "Nothing to do, unless its records are still wanted: copy the directory elsewhere before the broker starts.")
PARTITION_DIR_FUTURE = Kind("LT414", "PARTITION_DIR_FUTURE", I, "A partition directory renamed <topic>-<n>.<id>-future: a replica being moved into this log dir (AlterReplicaLogDirs). The broker resumes copying into it and swaps it for the current replica once it has caught up.", "Nothing to do; cancel the move with kafka-reassign-partitions if it is no longer wanted.")
PARTITION_DIR_STRAY = Kind("LT415", "PARTITION_DIR_STRAY", W, "A partition directory renamed <topic>-<n>.<id>-stray: a replica the cluster no longer assigns to this broker (KRaft). The broker neither serves nor deletes it; it may hold the last copy of records.", "Check that the partition is complete on its current replicas, then delete the directory by hand.")
SYMLINK = Kind("LT416", "SYMLINK", W, "A file or partition directory in the log dir is a symbolic link. Kafka follows it, so the data lives elsewhere; logtool's repairs refuse to write through it (a link can point anywhere).", "Check that the link points where it should; to repair the data, run logtool on the directory it points to.")
LOGTOOL_TEMP_LEFTOVER = Kind("LT417", "LOGTOOL_TEMP_LEFTOVER", W, "A temporary file of an interrupted logtool repair (.NAME.logtool-XXXX.tmp). The broker ignores it; the repair's journal finishes the work or its quarantine run undoes it.", "Run the same `logtool truncate --apply --quarantine DIR` again to finish the repair, or `logtool restore RUN` to undo it; then the temporary file can be deleted.")
SIDE_FILE_TOO_LARGE = Kind("LT418", "SIDE_FILE_TOO_LARGE", E, "A file beside the segments (a snapshot, checkpoint or metadata file) is far larger than Kafka ever writes it: a sparse or foreign file. logtool does not read it whole; the broker may fail to load the partition, or run out of memory doing so.", "Move the file out of the log dir and find out where it came from; the broker rebuilds producer snapshots and leader epochs from the log.")
NO_SEGMENTS = Kind("LT419", "NO_SEGMENTS", I, "A partition directory without a single segment. The broker starts the partition empty at its checkpointed log start offset; Kafka itself always keeps at least one (empty) segment, so files were removed (or left out of a copy). Where the offset checkpoints say the partition held records, their findings say which are gone.", "Find out where the segments went. If the checkpoints or another replica say the partition held records, they are gone from this log dir: let the replica re-fetch them.")
# -- paths and log dirs
NOT_KAFKA = Kind("LT501", "NOT_KAFKA", E, "This path is not a Kafka log dir, partition dir or segment file.", "Check the path. A stray directory inside a log dir stops the broker from starting: `logtool truncate --apply` moves it into its quarantine, whole (`logtool restore` puts it back).", at_start=AtStart.REFUSES, fix=Fix.MOVE_OUT, index_scope=True)
UNREADABLE = Kind("LT502", "UNREADABLE", E, "A file or directory could not be read.", "Check permissions and the disk.", operational=True, index_scope=True)
META_PROPERTIES_INVALID = Kind("LT503", "META_PROPERTIES_INVALID", E, "meta.properties cannot be read or lacks required fields.", "Restore it; it must name the same cluster.id and node id as before.", at_start=AtStart.REFUSES)
CHECKPOINT_INVALID = Kind("LT504", "CHECKPOINT_INVALID", E, "An offset checkpoint file cannot be parsed (unknown version, malformed line, wrong entry count). Kafka's reader reports the log dir as failed, so the broker takes it offline (and stops if it has no other), after resetting what the file records (recovery point 0, log start at the first segment).", "With the broker stopped, move the file aside: the broker then recovers every partition from its first segment and rewrites the file.", at_start=AtStart.LOG_DIR_OFFLINE)
CHECKPOINT_UNKNOWN_PARTITION = Kind("LT505", "CHECKPOINT_UNKNOWN_PARTITION", W, "An offset checkpoint names a partition that has no directory in this log dir. Kafka rewrites the checkpoints when it deletes or moves a partition, so the directory went away behind its back (deleted or moved by hand, lost with the disk) or this copy is incomplete. The broker ignores the entry.", "Find where the partition went. If this broker still hosts it, the broker re-creates it empty and copies it from the leader: make sure another replica holds its records.")
CHECKPOINT_ENTRY_MISSING = Kind("LT506", "CHECKPOINT_ENTRY_MISSING", I, "A partition is not listed in recovery-point-offset-checkpoint or replication-offset-checkpoint: it appeared after the last checkpoint write (new, or copied in). The broker recovers it from its first segment and learns its high watermark from the leader.", "Nothing to do; expect a longer recovery of this partition at start.")
HIGH_WATERMARK_BEYOND_LOG = Kind("LT507", "HIGH_WATERMARK_BEYOND_LOG", E, "replication-offset-checkpoint records a high watermark past the log end: records the cluster had committed (acknowledged to producers) are missing from this replica.", "Do not let this replica become leader (no unclean election); let it truncate and copy from an in-sync replica. If no replica holds the records, they are lost: find the copy of the files they were in.")
RECOVERY_POINT_BEYOND_LOG = Kind("LT508", "RECOVERY_POINT_BEYOND_LOG", W, "recovery-point-offset-checkpoint records a recovery point past the log end: records the broker had flushed to disk are missing (files cut or replaced by hand, a lost write, or a copy taken at two moments). The broker lowers the recovery point to the log end at load.", "Compare with another replica to see which records are missing here.", fix=Fix.CHECKPOINTS)
RECOVERY_SKIPS_DAMAGE = Kind("LT509", "RECOVERY_SKIPS_DAMAGE", E, "The recovery point lies in a segment after damaged data: Kafka recovers only from the segment holding the recovery point, so it never checks the damaged segment and serves it as it is.", "Repair with `logtool truncate` before starting the broker (or rescue the later segments first: Kafka's own recovery would delete them).", fix=Fix.TRUNCATE)
LOG_START_BEYOND_LOG = Kind("LT510", "LOG_START_BEYOND_LOG", E, "log-start-offset-checkpoint records a log start offset past the log end: at load the broker deletes every segment of the partition ('logEndOffset is smaller than logStartOffset').", "Do not start the broker on this log dir as it is: copy the partition directory aside first, then find out which of the checkpoint and the segments is wrong.")
CLEANER_OFFSET_BEYOND_LOG = Kind("LT511", "CLEANER_OFFSET_BEYOND_LOG", W, "cleaner-offset-checkpoint records a cleaned offset past the log end: the log lost records after the cleaner last ran. The cleaner resets to the log start and compacts the whole log again.", "Nothing to do for the cleaner; compare with another replica to see which records are missing here.", fix=Fix.CHECKPOINTS)
CHECKPOINT_BELOW_LOG_START = Kind("LT512", "CHECKPOINT_BELOW_LOG_START", I, "An offset checkpoint records an offset below the partition's first segment: the checkpoint is older than the deletion of the first segments. The broker raises the value to the log start.", "Nothing to do.", fix=Fix.CHECKPOINTS)
CLEAN_SHUTDOWN_WITH_DAMAGE = Kind("LT513", "CLEAN_SHUTDOWN_WITH_DAMAGE", E, "The log dir holds .kafka_cleanshutdown, so the broker trusts every file and skips recovery, yet a partition in it has damage that recovery would cut: the broker will serve the damaged bytes.", "With the broker stopped, repair the partition with `logtool truncate`, or remove .kafka_cleanshutdown so that the broker recovers this log dir at start.", fix=Fix.TRUNCATE)
META_PROPERTIES_MISMATCH = Kind("LT514", "META_PROPERTIES_MISMATCH", E, "The log dirs given together do not belong to one broker: their meta.properties name different cluster.id or node ids (broker.id/node.id), or two share a directory.id. The broker refuses to start with them.", "Find which log dir is foreign (copied from another broker or cluster) and take it out of log.dirs, or restore its meta.properties.", at_start=AtStart.REFUSES)
META_PROPERTIES_MISSING = Kind("LT515", "META_PROPERTIES_MISSING", W, "The log dir has no meta.properties. A ZooKeeper-mode broker writes a new one at start; a KRaft broker copies the ids of its other log dirs, and refuses to start if none has one.", "If this is a copy, restore meta.properties from the original; otherwise format the directory with kafka-storage.sh.", fix=Fix.META_PROPERTIES)
META_PROPERTIES_INCONSISTENT = Kind("LT516", "META_PROPERTIES_INCONSISTENT", W, "meta.properties holds a field its version does not read (node.id in version 0, broker.id in version 1): it was edited by hand or written by another tool, and the broker ignores that field.", "Rewrite the file with the fields of its version: version=0 uses broker.id, version=1 uses node.id.")
TMP_LEFTOVER = Kind("LT517", "TMP_LEFTOVER", I, "A .tmp copy of a checkpoint or metadata file: Kafka writes these files to .tmp and renames them, so a write was interrupted (a crash, or a copy taken mid-write). The broker reads the real file, the previous version, and overwrites the .tmp at its next write.", "Nothing to do.", fix=Fix.LEFTOVER)
NOT_AUDITED = Kind("LT518", "NOT_AUDITED", E, "A PATH given as HOST:PATH was not checked: no Spark executor runs on that host (or its task ran elsewhere), and logtool reads a broker's disk only on that broker.", "Start a Spark worker on the host (or add it to the cluster) and audit it again; nothing was read, so nothing is known about it.", operational=True)
# -- producers, transactions and consumer offsets: what the batches say of the clients that wrote them
PRODUCER_SEQUENCE_GAP = Kind("LT601", "PRODUCER_SEQUENCE_GAP", I, "An idempotent producer's sequence numbers skip ahead between two of its batches (same epoch): the batches in between are not in this log. Compaction and retention remove batches so; in a topic with neither, records were lost (an unclean leader election, a hand-cut log).", "In a topic without compaction, compare with another replica (`logtool audit --replicas`) to find the missing offsets.")
PRODUCER_SEQUENCE_DUPLICATE = Kind("LT602", "PRODUCER_SEQUENCE_DUPLICATE", W, "An idempotent producer's batch repeats or goes back behind sequence numbers it already wrote in the same epoch. The leader refuses such appends, so these records were written twice or out of order by another path (a log copied or merged by hand, a replica that diverged).", "Find both copies with `logtool dump --from-offset`; consumers see the records twice.")
PRODUCER_EPOCH_BACKWARDS = Kind("LT603", "PRODUCER_EPOCH_BACKWARDS", W, "A producer id writes with a lower epoch than it already wrote with: a fenced (zombie) producer's batches follow its successor's. The leader refuses them; on a replica they mean the log diverged from the leader's.", "Compare with another replica (`logtool audit --replicas`); check for two producers sharing a transactional.id.")
PRODUCER_SNAPSHOT_MISMATCH = Kind("LT604", "PRODUCER_SNAPSHOT_MISMATCH", W, "A producer-state snapshot disagrees with the log it summarises (a producer's epoch, last sequence or last offset). The broker loads the snapshot and trusts it: it may then refuse a producer's next batch as out of order, or accept a duplicate.", "With the broker stopped, move the snapshot out of the partition directory: the broker rebuilds producer state from the log.")
TRANSACTION_OPEN = Kind("LT605", "TRANSACTION_OPEN", I, "A transactional producer's batches at the log end have no commit or abort marker yet: a transaction in flight (or, in a copy, one that was in flight). read_committed consumers stop at its first offset until it ends.", "Nothing to do if the producer is alive; if the transaction never ends, see TRANSACTION_HANGING.")
TRANSACTION_HANGING = Kind("LT606", "TRANSACTION_HANGING", W, "A transaction has been open longer than the transaction timeout before the partition's last record: its coordinator lost it (KIP-664's hanging transaction). The last stable offset cannot pass its first offset, so read_committed consumers are stuck there and the log cleaner cannot clean past it.", "Abort it with the `kafka-transactions.sh ... abort` command in the message (Kafka 3.0+), after checking with `kafka-transactions.sh find-hanging`.")
CONSUMER_OFFSET_BACKWARDS = Kind("LT607", "CONSUMER_OFFSET_BACKWARDS", I, "In __consumer_offsets (checked with --deep), a group commits a lower offset for a topic partition than it had committed: its consumers read those records again. An offset reset does this on purpose; otherwise a late commit from a member that lost its partitions in a rebalance.", "Nothing to do for a reset; otherwise look at the group's rebalances around the commit's timestamp.")

# -- the log dir held against the KRaft metadata: the node's own __cluster_metadata log, replayed to its end
PARTITION_NOT_ASSIGNED = Kind("LT701", "PARTITION_NOT_ASSIGNED", W, "A partition directory that the KRaft metadata does not assign to this node: by the node's own metadata log, replayed to its end, the topic no longer exists (deleted, or never created in this cluster: a directory copied in from another) or the partition's replicas do not include this node (reassigned away, the directory left behind: KAFKA-15605, KAFKA-14616). At its next start a KRaft broker (Kafka 3.7 and later) finds it stray by its partition.metadata topic id, renames it <topic>-<n>.<id>-stray and neither serves nor deletes it. It may hold the last copy of records.", "See when and by which record the topic went or the replica moved: `logtool metadata --history TOPIC-N` on this log dir. Check that the partition is complete on its current replicas (or that its records are not wanted), then move the directory out of the log dir. A node that was down has an older metadata log than the cluster's: compare with a controller's first.")
ASSIGNED_PARTITION_MISSING = Kind("LT702", "ASSIGNED_PARTITION_MISSING", W, "The KRaft metadata assigns a partition to this node (and to this log dir's directory.id, where the metadata records directories: KIP-858), but the log dir has no directory for it: deleted or moved by hand, lost with a disk, or left out of a copy. At start the broker creates it empty and fetches its records from the leader; where no other replica holds them (a single broker, replication factor 1), they are lost and consumers' offsets past them fall out of range.", "Find where the directory went (another log dir of this broker, a backup, the source of the copy) and put it back before the broker starts. Otherwise let the broker create it anew, once another replica is known to hold its records.")
TOPIC_ID_MISMATCH = Kind("LT703", "TOPIC_ID_MISMATCH", W, "A partition directory whose partition.metadata names another topic id than the KRaft metadata gives the topic of that name: the directory belongs to an earlier topic of the same name (deleted and created again while this node was away) or to another cluster. Kafka 3.7 and later set it aside at start as stray (renamed <topic>-<n>.<id>-stray, neither served nor deleted) and, where the partition is assigned to this node, create it anew, empty.", "Do not move its files into the current topic: they are another topic's records. `logtool metadata --history TOPIC` shows when the current topic id was created. Keep the directory while its records may be wanted (`logtool dump` reads them), then move it out of the log dir.")
NODE_NOT_REGISTERED = Kind("LT704", "NODE_NOT_REGISTERED", W, "meta.properties names a node id that the KRaft metadata has no broker registration for, though the log dir holds partitions: the log dir was copied from another broker or cluster, its node id was edited, or the broker was unregistered. A broker configured with that node id registers anew and sets aside as stray every partition the metadata does not assign to it; one configured with another node id refuses to start with this meta.properties. Where the metadata assigns nothing to the node either, this one finding stands for all its partition directories.", "Check which node the log dir belongs to: its cluster.id and node id against the broker's configuration and the metadata's registrations (`logtool metadata` on this log dir lists them). Restore the right meta.properties, or take the log dir out of log.dirs.")
DIRECTORY_NOT_REGISTERED = Kind("LT705", "DIRECTORY_NOT_REGISTERED", W, "meta.properties' directory.id is not among the log dirs the KRaft metadata's registration of this broker lists (KIP-858, metadata.version 3.7-IV2 and later): the directory was formatted again, swapped for another or copied from elsewhere since the broker last registered. The metadata's placement of this broker's replicas does not name this directory; the broker registers the directories it has at its next start.", "If this is the broker's own log dir, check that it still holds the partitions it held (a directory formatted again lost them); if it came from elsewhere, take it out of log.dirs. `logtool metadata` on this log dir lists the directories the broker registered.")
REPLICA_DIRECTORY_MISMATCH = Kind("LT706", "REPLICA_DIRECTORY_MISMATCH", W, "The KRaft metadata places this node's replica of a partition in another directory than this log dir (the Directories of its PartitionRecord or PartitionChangeRecord, KIP-858): another log dir of this broker (a move between log dirs cut short, or a directory moved by hand), a directory the broker does not register, or LOST (one the broker reported offline). The broker reports where it finds the replica to the controller when it starts (AssignReplicasToDirs); if another of its log dirs holds the partition too, it refuses to start.", "Look for the partition in the broker's other log dirs (`logtool verify` over all of them names a partition held twice). Keep the copy that is complete and move the other out of its log dir before the broker starts.")
METADATA_RECORD_REFUSED = Kind("LT707", "METADATA_RECORD_REFUSED", E, "A record of this node's metadata log that Kafka's metadata loader refuses, as applying it throws: a PartitionChangeRecord for a topic id or partition no record created, a fence or change of a broker at an epoch that is not its registered one, a record type no release replays, a transaction record out of place. On a node with the controller role the fault is fatal: the node stops. A broker-only node logs it, counts it (metadata-load-error-count), stops writing metadata snapshots and goes on without the record, so its view of the cluster is not the controllers'.", "Find where this node's metadata log parts from the other nodes' (`logtool audit --replicas` over their log dirs compares the metadata logs too). A broker-only node fetches the log again from the controllers if, while it is stopped, its __cluster_metadata-0 is moved aside; a controller's log is only ever replaced from the quorum's, after comparing.")
METADATA_RECORD_UNREADABLE = Kind("LT708", "METADATA_RECORD_UNREADABLE", E, "A record of the metadata log that does not decode as a metadata record, though its batch is whole and its checksum matches: written damaged, or of a type or version newer than logtool knows (then it is logtool that cannot read it). Either way the state replayed here lacks it; a record Kafka cannot read is the same fault to its loader as METADATA_RECORD_REFUSED.", "Read it with `logtool dump --decoder` at its offset. If a newer Kafka wrote it, use a logtool that knows that version; otherwise treat it as METADATA_RECORD_REFUSED.")
METADATA_SNAPSHOT_UNUSABLE = Kind("LT709", "METADATA_SNAPSHOT_UNUSABLE", W, "A KRaft snapshot of the metadata log (<end offset>-<epoch>.checkpoint) that cannot be loaded: not whole (no SNAPSHOT_FOOTER, a torn or damaged batch), no SNAPSHOT_HEADER, or records that cannot be read. The state is replayed from the next older snapshot, or from the log's start, instead; where the log no longer holds the records after that point, the state lacks them (METADATA_LOG_GAP says so).", "Compare with the other nodes' metadata logs (`logtool audit --replicas`). A broker-only node fetches the metadata again from the controllers if, while it is stopped, its __cluster_metadata-0 is moved aside.")
METADATA_LOG_GAP = Kind("LT710", "METADATA_LOG_GAP", W, "Offsets of the metadata log that neither a snapshot nor the log holds: segments removed by hand or left out of a copy, or the snapshot the log goes on from is gone. The metadata log is never compacted, so its offsets have no gaps of their own: the state replayed here lacks what those records did.", "Find the missing segments or snapshot (the source of the copy, a backup). A broker-only node fetches the metadata again from the controllers if, while it is stopped, its __cluster_metadata-0 is moved aside.")

KINDS: tuple[Kind, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Kind))  # in catalog order

BY_NAME = {k.name: k for k in KINDS}
BY_CODE = {k.code: k for k in KINDS}


def kind(name: str) -> Kind:
    return BY_NAME[name]


def lookup(code_or_name: str) -> Kind | None:
    key = code_or_name.strip()
    return BY_CODE.get(key.upper()) or BY_NAME.get(key.upper())


def finding(kind: Kind | str, message: str, file: str | None = None, position: int | None = None,
            offset: int | None = None) -> Finding:
    """A finding of `kind`: a catalog constant (`finding(UNREADABLE, ...)`), or its name."""
    return Finding(kind if isinstance(kind, Kind) else BY_NAME[kind], message, file, position, offset)
