"""README.md's examples are real output: each `<!-- run ... -->` block's commands are run again, in order, in
one session of tools/docs.py (a scratch directory written /tmp/logtool-incident, a terminal 80 columns wide),
and the block is rewritten with what they print. `make readme` rewrites README.md in place;
tests/house/test_docs.py fails when README.md and a fresh run differ (quarantine run names aside, which hold the
time and a pid).

    <!-- run: SCENARIO [at-checkout] -->     the first block: the session's scenario, and whether its
    ```console                                commands start in the checkout (then `cd` moves them)
    $ logtool verify data       # exit 4     each command; `# exit N` when it exits N
    ```
    <!-- end run -->

The command reference and the findings catalog, which README.md once held, are on the docs site
(tools/docs.py) and in the man pages (tools/man.py).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from tools import docs

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"(<!-- run(?:: (?P<scenario>[\w-]+)(?P<checkout> at-checkout)?)? -->\n```console\n)"
                   r"(?P<body>.*?)(```\n<!-- end run -->)", re.S)


def commands(body: str) -> list[str]:
    return [line[2:] for line in body.splitlines() if line.startswith("$ ")]


def regenerated(text: str) -> str:
    """`text` with every run block's output made current."""
    blocks = list(BLOCK.finditer(text))
    if not blocks:
        return text
    first = blocks[0]
    with docs.session(first.group("scenario") or "sample", at_checkout=bool(first.group("checkout"))) as s:
        def fill(m: re.Match[str]) -> str:
            shown = "\n".join(s.run(line).shown() for line in commands(m.group("body")))
            return m.group(1) + shown + "\n" + m.group(5)
        return BLOCK.sub(fill, text)


def normalized(text: str) -> str:
    """What may differ between two runs of the same commands: a quarantine run's name."""
    return docs.RUN_NAME.sub("RUN", text)


def main() -> int:
    text = README.read_text()
    new = regenerated(text)
    if new != text:
        README.write_text(new)
        print(f"rewrote the examples of {README}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
