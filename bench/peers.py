"""The peers we measure against, on the same file: kafka-python (pure Python) and aiokafka (its
compiled record parser). Both want the file's bytes in memory (aiokafka refuses an mmap; kafka-python on
an mmap is six times slower), so each function takes those bytes; the runner times reading them apart.
Each returns (batches, records or None)."""
from __future__ import annotations


def kafka_python_batches(data: bytes) -> tuple[int, None]:
    from kafka.record.memory_records import MemoryRecords

    recs, n = MemoryRecords(data), 0
    while (b := recs.next_batch()) is not None:
        if not b.validate_crc():
            raise AssertionError(f"kafka-python: bad CRC in batch {n}")
        n += 1
    return n, None


def kafka_python_records(data: bytes, max_batches: int) -> tuple[int, int]:
    from kafka.record.memory_records import MemoryRecords

    recs, n, r = MemoryRecords(data), 0, 0
    while n < max_batches and (b := recs.next_batch()) is not None:
        n += 1
        for rec in b:
            rec.key, rec.value  # noqa: B018 - touch what a consumer reads
            r += 1
    return n, r


def aiokafka_batches(data: bytes) -> tuple[int, None]:
    from aiokafka.record.memory_records import MemoryRecords

    recs, n = MemoryRecords(data), 0
    while (b := recs.next_batch()) is not None:
        if not b.validate_crc():
            raise AssertionError(f"aiokafka: bad CRC in batch {n}")
        n += 1
    return n, None


def aiokafka_records(data: bytes) -> tuple[int, int]:
    from aiokafka.record.memory_records import MemoryRecords

    recs, n, r = MemoryRecords(data), 0, 0
    while (b := recs.next_batch()) is not None:
        b.validate_crc()
        n += 1
        for rec in b:
            rec.key, rec.value  # noqa: B018
            r += 1
    return n, r
