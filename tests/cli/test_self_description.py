"""What kafkasim says it is (its --help, its package docstring, its distribution's description) covers the
cluster: those three said "one Kafka broker" long after clusters and failover had landed."""

from __future__ import annotations

import tomllib

import kafkasim

from .support import REPO
from .support import kafkasim as run_kafkasim


def _descriptions() -> dict[str, str]:
    help_text = run_kafkasim("--help").stdout
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {"--help": " ".join(help_text.split()), "package docstring": kafkasim.__doc__ or "",
            "pyproject description": project["description"]}


def test_kafkasim_describes_itself_as_more_than_one_broker() -> None:
    for where, text in _descriptions().items():
        assert "one Kafka broker" not in text, where
        assert "cluster" in text, where
