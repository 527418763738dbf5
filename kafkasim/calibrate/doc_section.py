"""A generated section of a Markdown page: the text between two marker comments, replaced whole by the script
that writes it (docs/make_calibration.py, docs/make_published.py), the rest of the page kept."""

from __future__ import annotations

import re
from pathlib import Path


def write_between(page: Path, begin: str, end: str, block: str) -> None:
    """Put `block` (which starts with `begin` and ends with `end`) into `page` in place of the one there, or at
    the end of the page when it has none."""
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    text = pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
    page.write_text(text, encoding="utf-8")
