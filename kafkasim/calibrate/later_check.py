"""The committed preset on a later day: `docs/make_calibration.py --check` makes new quiet real runs of the held-out
configurations and sets the preset's predictions beside them, without a fit, and this module writes what it found
into docs/validation.md, after the Calibration section.

A preset describes the machine as it was while its runs were made: one fitted on a morning's runs predicted 11 of
the 12 held-out statistics of that morning within, and 9 of 12 of the evening's quiet runs (docs/calibration.md,
"Quiet runs"). The check says how far a preset carries to a day it never saw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkasim.calibrate.doc_section import write_between
from kafkasim.calibrate.held_out import END, latency_rows, prediction_table, quiet_sentence

CHECK_BEGIN = "<!-- calibration check: written by docs/make_calibration.py --check from docs/calibration.json -->"
CHECK_END = "<!-- calibration check: end -->"
TITLE = "## Calibration: the preset on a later day"


def check_section(data: dict[str, Any]) -> str:
    """The section: the later check docs/calibration.json keeps under ``check``, or how to make one."""
    check = data.get("check")
    if not isinstance(check, dict):
        body = ["No later check of this preset yet: `uv run python docs/make_calibration.py --check` makes one "
                "(~10 minutes: three quiet real runs of each held-out configuration, and no fit)."]
    else:
        rows = latency_rows(check["predictions"])
        within = sum(r["verdict"] == "within" for r in rows)
        again = ("" if not check.get("predicted_again") else
                 f" (predicted again on {str(check['predicted_again'])[:10]}, `--predict-again`)")
        body = [f"The preset fitted {data['when']} predicted the held-out configurations again beside "
                f"{check['runs']} new real runs of each, made {check['when']} (`docs/make_calibration.py --check`: "
                f"no fit, the preset and its predictions as in the section above){again}. {within} of {len(rows)} "
                f"predictions are within, by the same rule.{quiet_sentence(check.get('quiet'))}", "",
                *prediction_table(check["predictions"])]
    return "\n".join([CHECK_BEGIN, TITLE, "", *body, CHECK_END])


def write_check_section(page: Path, data: dict[str, Any]) -> None:
    """Put the section into `page` (docs/validation.md): in place of the one there, or else right after the
    Calibration section (kafkasim.calibrate.held_out's END marker), or else at the end."""
    block = check_section(data)
    text = page.read_text(encoding="utf-8")
    if CHECK_BEGIN not in text and END in text:
        page.write_text(text.replace(END, f"{END}\n\n{block}", 1), encoding="utf-8")
        return
    write_between(page, CHECK_BEGIN, CHECK_END, block)
