"""JSON (one document) and JSON Lines output."""
from __future__ import annotations

import json
import sys


def emit_json(doc: dict) -> None:
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def emit_jsonl(rows) -> None:
    for row in rows:
        sys.stdout.write(json.dumps(row, separators=(",", ":")))
        sys.stdout.write("\n")
