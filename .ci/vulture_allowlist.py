"""The dead-code check's reviewed allow-list (`.ci/run`, lint step; settings in pyproject.toml [tool.vulture]).

vulture reports code that nothing in kafkasim/, tests/ or benchmarks/ reads. Each name below is read all the
same, by a library or by the data model, and says by what. Names listed once cover every attribute of that
name in the package. Grouped by module; keep it so (a stale entry hides a real finding).
This file is never run or imported.
"""
# ruff: noqa
# fmt: off

# --- broker/ --------------------------------------------------------------------------------------------------
_.INVALID_FETCH_SIZE  # broker/errors.py: Kafka's Errors table, kept whole (error codes the simulator never raises)
_.BROKER_NOT_AVAILABLE  # broker/errors.py: idem
_.INVALID_TOPIC_EXCEPTION  # broker/errors.py: idem
_.is_from_consumer  # broker/fetch.py: FetchParams.isFromConsumer, Kafka's API beside isFromFollower

# --- real/ ----------------------------------------------------------------------------------------------------
_.tb  # real/processes.py: Processes.__exit__'s third parameter, required by the context-manager protocol
_.records_bytes  # real/request_log.py: a field of the parsed request-log line (the tests build them by name)

# --- scenario/ and sweep/ (pydantic, PyYAML) ------------------------------------------------------------------
_.model_config  # pydantic reads a model's model_config class attribute
_.field_title_should_be_set  # scenario/load.py: pydantic's GenerateJsonSchema hook, overridden
_.yaml_implicit_resolvers  # scenario/yaml_source.py: PyYAML's resolver table, read by its Resolver
_.log_retention_ms  # scenario/broker.py: read by name through topics.py's inheritance table (getattr)
_.log_retention_bytes  # scenario/broker.py: idem

# --- sim/ -----------------------------------------------------------------------------------------------------
_._factor  # sim/clock.py: RealtimeEnvironment's private pacing factor, read by SimPy (sim/__init__.py lists it)

# --- sweep/ ---------------------------------------------------------------------------------------------------
_.compress_type  # sweep/shipping.py: ZipInfo field, read by zipfile.writestr
_.mtime  # sweep/shipping.py: TarInfo fields zeroed for reproducible archives, read by tarfile
_.uid  # idem
_.gid  # idem
_.uname  # idem
_.gname  # idem
_.requests_rows  # sweep/spark_job.py: run columns, read through __dict__ into the runs table (sweep.py)
_.records_rows  # idem
_._jvm  # sweep/session.py: PySpark's SparkContext._jvm, reset with _gateway so the next session launches a JVM

# --- tests/ ---------------------------------------------------------------------------------------------------
_.no_rendering  # tests/report/test_write_figures.py: a fixture requested by parameter name
_.execution_count  # tests/notebooks/support.py: nbformat cell field, written into the saved notebook
_.BuildHookInterface  # tests/test_builds.py: the stand-in hatchling class hatch_build.py subclasses when the test loads it
_.target_name  # tests/test_builds.py: hatchling's attribute of a build hook, which hatch_build.py reads (outside vulture's paths)
_.do_GET  # tests/sweep/test_standalone_cluster.py: http.server.BaseHTTPRequestHandler's handler of a GET, called by name
