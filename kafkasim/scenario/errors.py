"""What a scenario author sees when a scenario is wrong: short, located, every problem at once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from pydantic_core import PydanticCustomError

# A key path inside the YAML document: mapping keys (str) and list indices (int).
Loc = tuple[str | int, ...]

# str(ScenarioError) stays readable even when a fuzzer or a badly merged file produces hundreds of problems;
# `.problems` keeps every one.
MAX_SHOWN = 15


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a scenario: where (file, line, key path) and what (message, allowed values)."""

    file: str
    line: int | None
    path: str
    message: str
    column: int | None = None
    """1-based, for problems found in the text itself (a bad byte, a tag); key paths say enough elsewhere."""

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.line is not None and self.column is not None:
            where += f":{self.column}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ScenarioError(Exception):
    """A scenario that cannot be used; str() lists every problem as `file:line: key.path: message`."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("ScenarioError needs at least one problem")
        self.problems: list[Problem] = list(problems)
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [str(p) for p in self.problems[:MAX_SHOWN]]
        hidden = len(self.problems) - MAX_SHOWN
        if hidden > 0:
            lines.append(f"... and {hidden} more problem{'s' if hidden > 1 else ''}")
        return "\n".join(lines)


def fail(message: str) -> NoReturn:
    """Raise a validation error whose text is exactly `message` (no "Value error, " prefix)."""
    raise PydanticCustomError("scenario", message)


def fail_at(problems: Sequence[tuple[Loc, str]]) -> NoReturn:
    """Raise problems found by a model validator, each at a key path relative to that model.

    A model validator's error has the model's location; carrying the relative paths lets the error point at
    `p99` or `delivery.timeout.ms` rather than at the mapping that holds them.
    """
    summary = "; ".join(f"{format_path(loc)}: {message}" for loc, message in problems)
    raise PydanticCustomError("scenario_checks", summary, {"problems": [(loc, m) for loc, m in problems]})


def format_path(loc: Iterable[str | int]) -> str:
    """`("topics", 0, "min.insync.replicas")` -> `topics[0].min.insync.replicas` (shortened if absurd)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out if len(out) <= 120 else out[:117] + "..."


def suggest(word: str, candidates: Iterable[str]) -> str | None:
    """The nearest candidate, if one is near enough to be what the author meant."""
    options = list(candidates)
    matches = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if matches:
        return matches[0]
    # Kafka keys are long and share prefixes ("replica.fetch."), where a dropped segment costs a lot of
    # ratio; a word that is a prefix or a dotted subsequence of exactly one candidate is still unambiguous.
    parts = word.split(".")
    near = [c for c in options if c.startswith(word) or _is_subsequence(parts, c.split("."))]
    return near[0] if len(near) == 1 else None


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return len(short) >= 2 and all(part in it for part in short)


def allowed_list(values: Iterable[object], budget: int = 150) -> str:
    """The allowed values, cut to about `budget` characters so a message stays one readable line."""
    items = [str(v) for v in values]
    shown: list[str] = []
    for item in items:
        if shown and len(", ".join([*shown, item])) > budget:
            return ", ".join(shown) + f", ... ({len(items) - len(shown)} more)"
        shown.append(item)
    return ", ".join(shown)


def unknown_message(what: str, word: str, candidates: Sequence[str]) -> str:
    """`unknown key 'x', did you mean 'y'?` or, with no near match, `unknown key 'x' (allowed: ...)`."""
    if not candidates:  # never "(allowed: )": say there is nothing to name
        return f"unknown {what} {word!r} (there are none here)"
    near = suggest(word, candidates)
    if near is not None:
        return f"unknown {what} {word!r}, did you mean {near!r}?"
    return f"unknown {what} {word!r} (allowed: {allowed_list(candidates)})"
