"""Kafka's message schemas for the records of its internal topics, written down in logtool's own short form
and read by `logtool.format.messages`.

Each module holds texts in this form (one message or struct per block, blocks separated by blank lines):

    MESSAGE TopicRecord id=2 versions=0 flexible=0+
    Name string 0+
    TopicId uuid 0+
    Partitions []Partition 0+
      PartitionId int32 0+
      Replicas []int32 0+
    LeaderRecoveryState int8 0+ default=0 tag=0 tagged=0+

    STRUCT Endpoint
    Name string 0+

- The header: `MESSAGE <Name> [id=<apiKey or record type>] versions=<valid> flexible=<flexible versions>`, or
  `STRUCT <Name>` for a schema's common struct, which the fields of any message in the same module may name.
- A field: `<Name> <type> <versions>` then any of `nullable=<versions>`, `default=<literal>`,
  `tag=<n> tagged=<versions>`. Names are the schema's (PascalCase); JSON prints them with a lower-case first
  letter, as Kafka's JsonConverters do.
- Types: bool int8 int16 uint16 int32 uint32 int64 float64 string bytes uuid, a struct name, or `[]<type>`
  for an array. A field whose type is a struct (or an array of one) not named by a STRUCT block lists that
  struct's fields on the lines after it, indented two spaces more.
- Versions as Kafka writes them: `0+`, `1-3`, `2`, `none`.
- `default=` as the schema's "default" (numbers, `true`/`false`, `null`, text without spaces); without one, the
  type's own (0, false, "", empty, the zero uuid).
"""
from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from logtool.format.messages import Message


@cache
def load(module: str) -> dict[str, "Message"]:
    """The messages of one schema module (`group`, `transaction`, `consumer`, `metadata`, `kraft`) by name,
    parsed once per process."""
    from logtool.format.messages import parse

    return parse(import_module(f"logtool.format.schemas.{module}").TEXT)


@cache
def by_record_type(module: str) -> tuple[dict[int, "Message"], dict[int, "Message"]]:
    """A coordinator log's key and value messages by record type (the int16 each record's key starts with):
    `group` for __consumer_offsets, `transaction` for __transaction_state."""
    messages = load(module).values()
    return ({m.id: m for m in messages if m.id is not None and m.name.endswith("Key")},
            {m.id: m for m in messages if m.id is not None and m.name.endswith("Value")})
