"""Text for people of `find`'s answer."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from logtool.render.text import console, glued

if TYPE_CHECKING:
    from logtool.reads.located import Located


def render_hit(found: Located) -> None:
    out, doc = console(), found.to_dict()
    ts = f" (timestamp {doc['timestamp']})" if doc["timestamp"] is not None else ""
    out.print(f"offset {doc['offset']}{ts}: {escape(glued(doc['segment']))} byte {doc['position']}, batch "
              f"{doc['batch_base_offset']}..{doc['batch_last_offset']} ({doc['batch_size']} bytes, magic "
              f"{doc['magic']})")
    out.print(f"read {doc['index_entries_read']} index entries and {doc['log_bytes_read']} log bytes")
    for note in doc["index_notes"]:
        out.print(f"[yellow]note[/]: {escape(note)}")
