"""What a sweep sends to a Spark cluster's executors so that nothing has to be installed there but Python.

Two files, each built once and reused while its contents are unchanged (their names carry a hash):

* **the kafkasim zip** (`kafkasim_zip`): the package's Python sources, added with `SparkContext.addPyFile`,
  which puts it on the Python workers' path. Compiled extension modules (.so) are left out: they cannot be
  imported from a zip, nor run on another machine's platform, so executors run the pure-Python kafkasim,
  which gives the same results.
* **the dependencies archive** (`dependencies_archive`): the installed distributions a sweep task imports
  (`EXECUTOR_DEPENDENCIES` and what they require, at the driver's exact versions: the locked ones under
  `uv`), added with `SparkContext.addArchive`. Spark unpacks it into each executor's working directory,
  and the workers find it first on their `PYTHONPATH`, before whatever their Python has installed. It
  holds compiled libraries (numpy, pyarrow, pydantic-core), so the workers must run the driver's Python
  version on the driver's platform (`dependencies_platform()`); a worker that does not gets an import
  error naming the missing or incompatible module.

A session of the caller's own is given both by `ship_kafkasim(spark)` (`run_sweep` calls it for any
non-local master); local masters need neither, their workers run the driver's own interpreter.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import os
import re
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXECUTOR_DEPENDENCIES = ("simpy", "pydantic", "pyyaml", "hdrhistogram", "pyarrow", "pandas", "numpy",
                         "mypy-extensions")
"""The distributions a sweep task imports (kafkasim itself is shipped as a zip); the archive holds them and
everything they require."""

DEPENDENCIES_DIR = "kafkasim-dependencies"
"""The directory, in each executor's working directory, that Spark unpacks the dependencies archive into."""

_SHIPPED_SUFFIXES = (".py", ".properties", ".yaml", ".json")
"""Files of the kafkasim package that go into the shipped zip."""


def _digest_name(prefix: str, digest: str, suffix: str, directory: Path | None) -> Path:
    return (directory or Path(tempfile.gettempdir())) / f"{prefix}-{digest[:16]}{suffix}"


def kafkasim_zip(directory: Path | None = None) -> Path:
    """A zip of this kafkasim package's sources, for executors to import; reused while the sources match.

    The name carries a hash of the contents, so a changed source makes a new zip and an executor never
    imports a stale copy.
    """
    import kafkasim

    package = Path(__file__).resolve().parent.parent  # kafkasim/, this file being kafkasim/sweep/shipping.py
    files = sorted(
        p for p in package.rglob("*")
        if p.is_file() and p.suffix in _SHIPPED_SUFFIXES and "__pycache__" not in p.parts
        and p.name != "_compiled.json"  # the local build's record of its extensions, which are not shipped
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(package.parent)).encode())
        digest.update(path.read_bytes())
    target = _digest_name(f"kafkasim-{kafkasim.__version__}", digest.hexdigest(), ".zip", directory)
    if not target.is_file():
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                # A fixed timestamp: the same sources give the same bytes.
                info = zipfile.ZipInfo(str(path.relative_to(package.parent)), date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
        tmp.replace(target)
    return target


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503's normalised name


def dependency_distributions(roots: tuple[str, ...] = EXECUTOR_DEPENDENCIES) -> list[metadata.Distribution]:
    """The installed distributions `roots` name and, transitively, every requirement of theirs that applies
    here (environment markers evaluated for this interpreter; no extras), sorted by name."""
    found: dict[str, metadata.Distribution] = {}
    pending = list(roots)
    while pending:
        name = _canonical(pending.pop())
        if name in found:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise RuntimeError(f"cannot ship {name!r} to the executors: it is not installed in this Python "
                               f"({sys.executable}), which a sweep needs") from None
        found[name] = distribution
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return [found[name] for name in sorted(found)]


def dependencies_platform() -> str:
    """What the archive's compiled libraries need of a worker: the driver's Python and platform."""
    return f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"


def _archive_members(distributions: list[metadata.Distribution]) -> list[tuple[str, Path]]:
    """(path in the archive, file) for every installed file of the distributions inside site-packages."""
    members: dict[str, Path] = {}
    for distribution in distributions:
        if distribution.files is None:
            raise RuntimeError(f"cannot ship {distribution.metadata['Name']} to the executors: its installation "
                               "lists no files (no RECORD); reinstall it with pip or uv")
        for file in distribution.files:
            name = file.as_posix()
            # Scripts and data installed outside site-packages (../../bin/…) and bytecode caches stay behind.
            if name.startswith("../") or "__pycache__" in file.parts:
                continue
            path = Path(str(distribution.locate_file(file)))
            if path.is_file():
                members[name] = path
    return sorted(members.items())


def dependencies_archive(directory: Path | None = None) -> Path:
    """A tar of the installed dependencies a sweep task imports, laid out as site-packages; reused while the
    distributions, their versions and the platform are the same (the name carries a hash of them)."""
    distributions = dependency_distributions()
    digest = hashlib.sha256(dependencies_platform().encode())
    for distribution in distributions:
        digest.update(f"\n{_canonical(distribution.metadata['Name'])}=={distribution.version}".encode())
    target = _digest_name("kafkasim-dependencies", digest.hexdigest(), ".tar", directory)
    if not target.is_file():
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        # Uncompressed: most of it is compiled libraries, which compress poorly and slowly, and the copy
        # travels once per executor over the cluster's network.
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as archive:
            for name, path in _archive_members(distributions):
                info = archive.gettarinfo(str(path), arcname=name)
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                info.mode = 0o755 if info.mode & 0o111 else 0o644
                with path.open("rb") as handle:
                    archive.addfile(info, handle)
        tmp.replace(target)
    return target


def ship_kafkasim(spark: SparkSession) -> Path:
    """Put kafkasim and its dependencies on every executor's Python path (once per SparkContext); returns
    the kafkasim zip."""
    sc: Any = spark.sparkContext
    shipped: Path | None = getattr(sc, "_kafkasim_zip", None)
    if shipped is None:
        shipped = kafkasim_zip()
        sc.addPyFile(str(shipped))
        sc.addArchive(f"{dependencies_archive()}#{DEPENDENCIES_DIR}")
        # SparkContext.environment is what PySpark hands each Python function as its workers' environment
        # (spark.executorEnv.* and the `environment` argument end up there); PythonWorkerFactory puts its
        # PYTHONPATH after Spark's own pyspark.zip and py4j. The entry is relative: the workers start in
        # the executor's working directory, where Spark unpacks the archive.
        existing = sc.environment.get("PYTHONPATH")
        sc.environment["PYTHONPATH"] = DEPENDENCIES_DIR + (os.pathsep + existing if existing else "")
        sc._kafkasim_zip = shipped
    return shipped
