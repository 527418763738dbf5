"""Regenerates the README's figures from a full run of scenarios/quickstart.yaml:

    uv run python docs/images/make_images.py
"""

from __future__ import annotations

from pathlib import Path

import kafkasim
from kafkasim.report import latency_cdf_figure, produce_swimlane_figure
from kafkasim.report.figures import save_png

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def main() -> None:
    result = kafkasim.run_scenario(kafkasim.load_scenario(ROOT / "scenarios" / "quickstart.yaml"))
    tables = (result.requests, result.records, result.timeseries, result.summary)
    save_png(produce_swimlane_figure(*tables), HERE / "quickstart_swimlane.png", dpi=90)
    save_png(latency_cdf_figure(result.requests, result.records, result.summary), HERE / "quickstart_latency.png", dpi=90)
    print(f"wrote figures to {HERE}")


if __name__ == "__main__":
    main()
