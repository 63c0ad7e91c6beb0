"""Options shared by several subcommands."""
from __future__ import annotations

from pathlib import Path

import click

paths_argument = click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json", "jsonl"]), default="text",
                             show_default=True, help="text for people, json (one document) or jsonl for machines")
deep_option = click.option("--deep", is_flag=True, help="also decompress and check every record")
