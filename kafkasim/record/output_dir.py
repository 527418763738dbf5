"""Where kafkasim may write a directory, and how it replaces one: the rules every writer shares.

`kafkasim run --out`, `RunResult.save`, `kafkasim plot` (its `figures/`) and `kafkasim sweep --out` all
write a whole directory under a temporary name and rename it into place. Before any work starts,
`check_output_dir` refuses a location that cannot or must not be written:

- `''`, the working directory or one of its ancestors (replacing them would pull the floor from under the
  user's shell: kafkasim never touches the working directory);
- a name longer than the file system allows, a path whose existing part is a file (`/dev/null/x`), or a
  parent in which no directory can be created (`/proc/x`, a read-only mount);
- a symbolic link (a rename replaces the link, it does not write through it), or a file;
- a non-empty directory unless kafkasim wrote it (its `Layout.marker` is there) *and* it holds nothing but
  kafkasim's own files: a file a user put into an earlier result is never deleted.

`replace_dir` does the final swap and checks again, after moving the old directory aside and before
deleting it, so a file added while a run was going is not lost either.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHOOSE = "choose an empty or new directory"
# Temporary siblings are named after the target, cut so that even a name at the file system's limit
# leaves room for the prefix and the random suffix.
_TMP_NAME_CHARS = 64


class OutputDirError(ValueError):
    """kafkasim will not write a directory there; the message says why and what is allowed."""


@dataclass(frozen=True)
class Layout:
    """What a directory kafkasim wrote looks like: `is_own(dir)` recognises one (by the `marker` file
    kafkasim writes into each), `foreign(dir)` lists the entries of `dir` that kafkasim did not write."""

    what: str  # "a kafkasim result", "a kafkasim sweep result"
    marker: str
    is_own: Callable[[Path], bool]
    foreign: Callable[[Path], list[str]]


def describe(text: str) -> str:
    """A path as a message shows it: '' quoted, a very long name cut."""
    return repr(text) if text == "" else _short(text)


def _short(name: str) -> str:
    return name if len(name) <= 60 else f"{name[:40]}…({len(name)} characters)"


def _entries(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(_short(n) for n in sorted(names)[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(path.anchor or "/")


def _probe_writable(directory: Path) -> str | None:
    """None if a directory can be created in `directory` (created and removed at once), else the reason."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".kafkasim-probe-", dir=directory))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def refusal(target: Path, layout: Layout) -> str | None:
    """Why an existing `target` may not be replaced (None: it is empty, or kafkasim's own and nothing else)."""
    if target.is_symlink():
        return (f"is a symbolic link (a rename would replace the link, not write through it); {CHOOSE}, or give "
                "the directory it points to")
    if not target.is_dir():
        return f"exists and is not a directory; {CHOOSE}"
    try:
        names = [p.name for p in target.iterdir()]
    except OSError as exc:
        return f"cannot be read ({exc.strerror}); {CHOOSE}"
    if not names:
        return None
    if not layout.is_own(target):
        return (f"is not empty ({_entries(names)}) and is not {layout.what} (no {layout.marker}); kafkasim only "
                f"replaces a directory it wrote itself: {CHOOSE}")
    foreign = layout.foreign(target)
    if foreign:
        return (f"is {layout.what}, but it also holds files kafkasim did not write ({_entries(foreign)}), "
                f"which a new run would delete; move them elsewhere or {CHOOSE}")
    return None


def check_output_dir(path: str | os.PathLike[str], layout: Layout, *, label: str | None = None) -> Path:
    """The absolute target for `path` if kafkasim may write `layout` there; OutputDirError otherwise.

    `label` starts every message (default: the path as given, e.g. "--out runs/x" from the CLI).
    Nothing is created: the parent's writability is probed with a directory made and removed at once.
    """
    text = os.fspath(path)
    prefix = label if label is not None else describe(text)
    if text == "":
        raise OutputDirError(f"{prefix}: an empty path; give a directory name, e.g. runs/mine")
    target = Path(os.path.abspath(text))
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        cwd = None
    try:
        real = target.resolve()
    except (OSError, RuntimeError):  # a symlink loop: refused below as a symbolic link
        real = target
    if cwd is not None and (real == cwd or target == cwd):
        raise OutputDirError(f"{prefix}: is the working directory ({cwd}); kafkasim never replaces it: {CHOOSE}, "
                             "e.g. runs/mine")
    if cwd is not None and (cwd.is_relative_to(real) or cwd.is_relative_to(target)):
        raise OutputDirError(f"{prefix}: contains the working directory ({cwd}); kafkasim never replaces it: "
                             f"{CHOOSE}, e.g. runs/mine")
    if len(os.fsencode(target)) >= 4096:
        raise OutputDirError(f"{prefix}: the path is longer than the system allows (4095 bytes); choose a shorter one")
    existing = _existing_ancestor(target)
    if existing != target and not existing.is_dir():
        raise OutputDirError(f"{prefix}: {existing} is not a directory, so nothing can be created under it; "
                             f"{CHOOSE}")
    for part in target.relative_to(existing).parts if existing != target else (target.name,):
        limit = _name_max(existing if existing.is_dir() else existing.parent)
        if len(os.fsencode(part)) > limit:
            raise OutputDirError(f"{prefix}: the name {_short(part)} is longer than this file system allows "
                                 f"({limit} bytes); choose a shorter name")
    if existing == target:
        reason = refusal(target, layout)
        if reason is not None:
            raise OutputDirError(f"{prefix}: {reason}")
        existing = target.parent
    problem = _probe_writable(existing)
    if problem is not None:
        raise OutputDirError(f"{prefix}: cannot create a directory in {existing} ({problem}); choose a directory "
                             "you can write to")
    return target


def make_temp_dir(target: Path, kind: str = "tmp") -> Path:
    """An empty hidden sibling of `target` (same file system, so the final rename is atomic), with the
    permissions mkdir would give (mkdtemp makes it private)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name[:_TMP_NAME_CHARS]}.{kind}-", dir=target.parent))
    tmp.chmod(0o777 & ~_current_umask())
    return tmp


def write_dir(target: Path, layout: Layout, write: Callable[[Path], None], *, label: str | None = None) -> None:
    """Write a directory atomically: ``write(tmp)`` fills a hidden sibling of `target`, which then replaces
    it (`replace_dir`). If anything fails -- the temporary directory cannot be made, `write` raises, the
    target is not kafkasim's to replace -- the temporary directory is removed and `target` is unchanged;
    OutputDirError says what is wrong, other exceptions propagate."""
    prefix = label if label is not None else str(target)
    try:
        tmp = make_temp_dir(target)
    except OSError as exc:
        raise OutputDirError(f"{prefix}: cannot create a directory in {target.parent} ({exc.strerror})") from None
    try:
        write(tmp)
        replace_dir(tmp, target, layout, label=prefix)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def replace_dir(new: Path, target: Path, layout: Layout, *, label: str | None = None) -> None:
    """Rename `new` to `target`. An existing target is moved aside to a hidden sibling, checked there (it
    must still be empty or kafkasim's own and nothing else: if not, it is put back and OutputDirError
    raised), and deleted after the swap; a crash in between leaves no directory under the target name
    rather than a mixed one."""
    prefix = label if label is not None else str(target)
    if not os.path.lexists(target):
        try:
            os.rename(new, target)
            return
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
    reason = refusal(target, layout)  # cheap early answer; checked again once moved aside
    if reason is not None:
        raise OutputDirError(f"{prefix}: {reason}")
    old = Path(tempfile.mkdtemp(prefix=f".{target.name[:_TMP_NAME_CHARS]}.old-", dir=target.parent))
    old.rmdir()
    os.rename(target, old)
    reason = refusal(old, layout)
    if reason is not None:
        os.rename(old, target)
        raise OutputDirError(f"{prefix}: {reason}")
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
