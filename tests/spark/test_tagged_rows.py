"""The check tasks' rows go to the JVM as they are built (driver._tagged), without PySpark's conversion: so
every row must already be in the form that conversion would give it. Held here, without a JVM, for the rows of
real log dirs and of Kafka-written damage: converted out to Python values and back, a row is what it was."""
from __future__ import annotations

import datetime

import pytest
from conftest import KAFKA_WRITTEN, REAL

from logtool.spark.listing import list_path
from logtool.spark.outcome import checked_rows
from logtool.spark.rows import PARTITION, TAGGED, timestamp
from logtool.spark.split import split
from logtool.spark.task import Settings, check_unit

DIRS = [REAL / "William0423__kafka" / "kafka-logs", REAL / "seanorth__kafka-server" / "kafka-logs", REAL.parent / "real-more" / "Jeong-Rae__KafkaDemo" / "kraft-combined-logs", *sorted(KAFKA_WRITTEN.glob("corrupt-*")),
        KAFKA_WRITTEN / "v2-gzip-logappendtime", KAFKA_WRITTEN / "v0-none", KAFKA_WRITTEN / "v2-idempotent-txn"]


def _rows(path, settings: Settings) -> list[tuple]:
    listing = list_path(str(path))
    return [row for unit in split([listing.targets], 1 << 40)
            for row in checked_rows(check_unit(settings, unit))]


@pytest.mark.parametrize("settings", [Settings(), Settings(deep=True, replicas=True)], ids=["plain", "deep-replicas"])
def test_every_row_is_in_the_form_spark_holds(settings):
    partitions = stamped = 0
    for path in DIRS:
        for row in _rows(path, settings):
            assert TAGGED.toInternal(TAGGED.fromInternal(row)) == row, (path, row[0])
            if row[0] == PARTITION:
                partitions += 1
                stamped += any(s[9] is not None for s in row[2][-7])  # a segment's first_timestamp
    assert partitions > 20 and stamped > 10  # the rows compared hold what needs converting


def test_a_timestamp_is_held_in_microseconds_as_far_as_calendars_go():
    assert timestamp(1_700_000_000_123) == 1_700_000_000_123_000
    assert timestamp(0) == 0
    assert timestamp(-1) is None and timestamp(None) is None  # Kafka's "none"
    last = datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=datetime.UTC)
    last_ms = int(last.timestamp() * 1000)
    assert timestamp(last_ms) == last_ms * 1000
    assert timestamp(last_ms + 1) is None and timestamp(2**63 - 1) is None  # a corrupt value
