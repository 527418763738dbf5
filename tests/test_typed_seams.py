"""Typed seams: every `Any` in the package's annotations is listed here with its reason; a new one fails.

A component seam (what one component hands another: a request, a response, a connection, a callback) is typed
with the concrete class or a Protocol, so mypy and a reader can follow a request from the client into the broker
model and back. `Any` stays only where the value really has no one type (JSON-shaped summaries, user input
before validation, pandas/matplotlib options) or where a layer rule forbids naming the class, and then this
list says why. The scan reads annotations only (parameters, returns, annotated assignments, string
annotations included); `cast(Any, ...)` and the like are not annotations.

To type one: remove its line below. To add one: first try a Protocol; if `Any` it must be, add it under the
right reason (or a new reason that a reviewer can check).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kafkasim"

# --- the reasons ---------------------------------------------------------------------------------------------
LAZY = "a module's __getattr__ (PEP 562) returns whichever object the lazily imported name is"
TAIL_STATE = ("the producer look-ahead's mutable tail record [batches, size, records, closed]: a list, for speed "
              "on the hot path (a class would cost an object per partition touched)")
SCENARIO_MODEL_BELOW = ("a kafkasim.scenario model (a distribution, a fault) read by a layer below scenario/, "
                        "which may not import it (tests/test_layers.py)")
SIMPY_CALLBACK = ("the event SimPy passes a callback (a Delivery): untyped so that the compiled build does no type "
                  "check per delivered message")
SIMPY_HEAP = "SimPy's private event heap, entries (time, priority, id, event) as SimPy builds them"
COLUMNS = "column builders over any column of the requests/records tables (numbers, strings, numpy dtypes)"
SUMMARY = ("the run's summary (summary.json), counters and run info: JSON-shaped mappings of mixed values, read "
           "by key; figure and table options passed through to matplotlib/rich/pandas")
UNVALIDATED = ("user input before or during validation (YAML nodes, --set values, pydantic validator and "
               "JSON-schema hooks): any shape until checked")
SWEEP = "sweep grid values and Spark rows: JSON-shaped values of the sweep file, any scalar type"
REAL = "a real Kafka run's JSON: its request log lines, config maps and fault plans, JSON-shaped"
PRESET = ("a fitted preset file's YAML document and the held-out check's or published figures' JSON (kafkasim.calibrate): JSON-shaped "
          "mappings of mixed values, checked where read")
SIGNAL_HANDLER = "the previous SIGINT handler as signal.signal returns it (a callable, an int or None)"


def _each(module: str, reason: str, *entries: str) -> list[tuple[tuple[str, str], str]]:
    return [((module, entry), reason) for entry in entries]


# (module under kafkasim/, where) -> reason. `where`: `function(parameter)`, `function->` (its return),
# `scope:target` (an annotated assignment); nested scopes joined with dots.
ALLOWED: dict[tuple[str, str], str] = dict([
    *_each('_lazy.py', LAZY,
        'lazy_getattr->',
        'lazy_getattr.__getattr__->',
    ),
    *_each('clients/accumulator.py', TAIL_STATE,
        'RecordAccumulator.tail_state->',
        'VirtualTails.__init__:self._last_state',
        'VirtualTails.__init__:self._state',
        'VirtualTails._tail->',
    ),
    *_each('calibrate/fit.py', SUMMARY,
        'fit(measured_summary)',
        '_fit(measured_summary)',
        '_fit.counted(summaries)',
        '_fit.residuals_of(summaries)',
        'simulate->',
        '_simulate->',
    ),
    *_each('calibrate/targets.py', SUMMARY,
        '_cluster_cores(summary)',
        'measured(summaries)',
        'statistics(summary)',
        'targets(summary)',
        'with_request_log(summary)',
        'with_request_log->',
    ),
    *_each('calibrate/preset.py', SUMMARY,
        'document(run_info)',
        '_is_set(data)',
    ),
    *_each('calibrate/preset.py', PRESET,
        'Preset:fitted',
        '_preset_data->',
        'document->',
        'document:parameters',
        'write_preset(document)',
    ),
    *_each('calibrate/predict.py', SUMMARY,
        'predict(fitted_summary)',
        'as_run_info->',
    ),
    *_each('console/compare.py', SUMMARY,
        'band_table(prediction)',
    ),
    *_each('console/run_command.py', SUMMARY,
        '_band(summary)',
        '_band->',
    ),
    *_each('calibrate/later_check.py', PRESET,
        'check_section(data)',
        'write_check_section(data)',
    ),
    *_each('calibrate/held_out.py', PRESET,
        'prediction_table(rows)',
        'latency_rows(rows)',
        'latency_rows->',
        'cores_lines(rows)',
        'breakdown_lines(rows)',
        'breakdown_lines:by_config',
        'breakdown_rows(fit)',
        'breakdown_rows->',
        'counted(rows)',
        'counted->',
        '_of(data)',
        '_medians(data)',
        '_collector(data)',
        'section(data)',
        'write_section(data)',
        'findings(data)',
        'findings:by_config',
        'write_findings(data)',
        '_real_runs(row)',
        'fit_verdict(row)',
        '_runs(row)',
        '_either(rows)',
    ),
    *_each('calibrate/published.py', PRESET,
        'section(data)',
        'write_section(data)',
    ),
    *_each('console/run_command.py', SIGNAL_HANDLER,
        'StopOnInterrupt.__init__:self._previous',
    ),
    *_each('sweep/session.py', SIGNAL_HANDLER,
        '_Launch:sigint',
    ),
    *_each('console/summary.py', SUMMARY,
        '_stat_cells(stats)',
        'api_table(data)',
        'brokers_with_requests(summary)',
        'client_errors_table(summary)',
        'client_latency_table(summary)',
        'cores_line(summary)',
        'counters_table(counters)',
        'delivery_table(summary)',
        'delivery_table:producers',
        'failovers_table(summary)',
        'failovers_table.between(a)',
        'failovers_table.between(b)',
        'failovers_table.leader(value)',
        'failovers_table:moved',
        'headline(summary)',
        'stalls_table(summary)',
        'stalls_table:stalls',
        'lost_after_ack_table(summary)',
        'lost_after_ack_table:lost',
        'outcomes_line(summary)',
        'per_broker_tables(summary)',
        'per_broker_tables.percent(data)',
        'per_broker_tables:apis',
        'per_broker_tables:per_broker',
        'per_client_tables(summary)',
        'per_client_tables:consumers',
        'per_client_tables:producers',
        'phases_table(summary)',
        'phases_table:latency',
        'phases_table:only',
        'phases_table:phases',
        'print_summary(summary)',
        'summary_renderable(summary)',
    ),
    *_each('real/config_map.py', REAL,
        'KafkaConfigs:topics',
        '_dumped(model)',
        '_dumped->',
        '_value(value)',
    ),
    *_each('real/failovers.py', SUMMARY,
        'real_failovers->',
        'real_failovers:out',
    ),
    *_each('real/request_log.py', REAL,
        '_entry->',
        '_float(value)',
        '_learn_topic_names(body)',
        '_row(body)',
        '_topic(entry)',
        'parse_lines:parsed',
    ),
    *_each('real/runner.py', REAL,
        'RealRun:faults',
        '_assemble(configs)',
        '_run(configs)',
    ),
    *_each('record/phases.py', SCENARIO_MODEL_BELOW,
        'fault_spans(faults)',
    ),
    *_each('record/record_latency.py', SUMMARY,
        'RecordLatency.e2e_summary->',
        'RecordLatency.e2e_summary:out',
        'RecordLatency.summary->',
        'RecordLatency.summary:out',
        '_histogram_summary->',
        '_histogram_summary:out',
    ),
    *_each('record/recorder.py', COLUMNS,
        '_column(dtype)',
        '_column(rows)',
        '_error_columns(rows)',
        '_float_column(values)',
        '_strings(rows)',
        '_strings->',
        'records_frame:columns',
        'requests_frame:columns',
    ),
    *_each('record/result.py', SUMMARY,
        'RunResult.__init__(run_info)',
        'RunResult.__init__(summary)',
        'RunResult.__init__:self.run_info',
        'read_run_info->',
    ),
    *_each('record/summary.py', SUMMARY,
        '_Rows.column(dtype)',
        '_api_summary->',
        '_api_summary:summary',
        '_breakdown->',
        '_client_requests->',
        '_consumer_summary->',
        '_delivery->',
        '_json_value(value)',
        '_json_value->',
        '_lost_after_ack->',
        '_lost_after_ack.counts->',
        '_per_broker->',
        '_per_broker:entry',
        '_per_broker:out',
        '_per_client->',
        '_phase_summary->',
        '_produce_latency->',
        '_produce_latency:out',
        '_producer_summary->',
        'outcome_counts(summary)',
        'percentiles(values_ms)',
        'summarize(counters)',
        'summarize->',
        'summarize:summary',
    ),
    *_each('record/stalls.py', SUMMARY,
        'stalls_summary->',
        'stalls_summary.figures->',
    ),
    *_each('record/window.py', SUMMARY,
        '_began(failover)',
        'windowed:cut',
    ),
    *_each('report/breakdown.py', SUMMARY,
        'request_breakdown_figure(summary)',
    ),
    *_each('report/compare.py', SUMMARY,
        'Group:stats',
        'cannot_show(run_info)',
        'comparison_json->',
        'difference(base)',
        'difference(other)',
    ),
    *_each('report/export.py', SUMMARY,
        '_stat_row(stats)',
        '_stat_row->',
        '_write_csv(rows)',
        'counter_rows(summary)',
        'counter_rows->',
        'counter_rows:rows',
        'latency_rows->',
        'latency_rows:rows',
    ),
    *_each('report/fetch_waits.py', SUMMARY,
        'fetch_waits_figure(summary)',
    ),
    *_each('report/figures.py', SUMMARY,
        'figure_builders(summary)',
        'figure_builders(swimlane_request_id)',
        'write_figures(summary)',
        'write_figures(swimlane_request_id)',
    ),
    *_each('report/frames.py', SUMMARY,
        'acks_value(value)',
        'natural_key->',
        'natural_key:parts',
        'warmup_ms(summary)',
    ),
    *_each('report/html.py', SUMMARY,
        'glance(summary)',
        'glance:latency',
        'glance:moved',
        'glance:phases',
        '_facts_table(facts)',
        '_is_stats(value)',
        '_number(value)',
        '_seconds(value_ms)',
        '_stats_table(notes)',
        '_stats_table(rows)',
        'failovers_table(summary)',
        'failovers_table.between(a)',
        'failovers_table.between(b)',
        'failovers_table.learned(f)',
        'failovers_table.learned:clients',
        'failovers_table.leader(value)',
        'failovers_table:moved',
        'outcomes_table(summary)',
        'per_broker_tables(per_broker)',
        'per_broker_tables.gauge(data)',
        'phases_table(summary)',
        'phases_table:latency',
        'phases_table:phases',
        'slowest_produce_ids->',
        'summary_tables(summary)',
        'summary_tables.walk(node)',
    ),
    *_each('report/latency.py', SUMMARY,
        'Curve:style',
        'latency_cdf_figure(summary)',
        'latency_histogram_figure(summary)',
    ),
    *_each('report/purgatory_sizes.py', SUMMARY,
        'purgatory_figure(summary)',
        'purgatory_figure.order->',
    ),
    *_each('report/replication.py', SUMMARY,
        '_aggregate_isr_figure(summary)',
        '_aggregate_offsets_figure(summary)',
        '_step(style)',
        'isr_size_figure(summary)',
        'log_offsets_figure(summary)',
        'log_offsets_figure:style',
    ),
    *_each('report/swimlane.py', SUMMARY,
        'produce_swimlane_figure(request_id)',
        'produce_swimlane_figure(summary)',
    ),
    *_each('report/swimlane_story.py', SUMMARY,
        'Story:request_id',
        '_batches(request_id)',
        'build_story(request_id)',
        'build_story(summary)',
        'choose_produce(request_id)',
        'choose_produce(summary)',
    ),
    *_each('report/time_axis.py', SUMMARY,
        'legend_outside(options)',
        'step_gauge(style)',
    ),
    *_each('report/trace.py', SUMMARY,
        '_busy_at(exclude)',
        'scenario_of->',
        'trace_json->',
        'trace_request(choice)',
    ),
    *_each('run/engine.py', SUMMARY,
        'Engine._counters->',
        'Engine._counters:counters',
        'Engine._result(counters)',
    ),
    *_each('run/failovers.py', SCENARIO_MODEL_BELOW,
        '_fault_on(faults)',
        '_fault_on->',
        'failover_row(faults)',
        'failovers(faults)',
    ),
    *_each('run/failovers.py', SUMMARY,
        'failover_row->',
        'failover_row:row',
        'failovers->',
        'failovers:out',
    ),
    *_each('run/snapshot.py', SUMMARY,
        'RecentLatencies.latencies:stats',
    ),
    *_each('scenario/base.py', UNVALIDATED,
        'OrShorthand:shorthand',
    ),
    *_each('scenario/broker.py', UNVALIDATED,
        'BrokerConfig._removed(data)',
        'BrokerConfig._removed->',
    ),
    *_each('scenario/clients.py', UNVALIDATED,
        'FollowerConfig._moved(data)',
        'FollowerConfig._moved->',
        '_acks(value)',
        '_acks->',
        '_arrival_shorthand(value)',
        '_arrival_shorthand->',
    ),
    *_each('scenario/cluster.py', UNVALIDATED,
        'BrokerOverride._only_per_broker_keys(data)',
        'BrokerOverride._only_per_broker_keys->',
        '_defaults_come_from_the_broker(schema)',
    ),
    *_each('scenario/hardware.py', UNVALIDATED,
        'Hardware._a_mapping(data)',
        'Hardware._a_mapping->',
    ),
    *_each('scenario/distributions.py', UNVALIDATED,
        'Constant._as_shorthand->',
        '_shorthand->',
        '_shorthand.expand(value)',
        '_shorthand.expand->',
    ),
    *_each('scenario/load.py', UNVALIDATED,
        ':_DEFAULT_FORMATTERS',
        '_SchemaGenerator.field_title_should_be_set(schema)',
        '_describe_ranges(schema)',
        'scenario_json_schema->',
        'validate_data(data)',
    ),
    *_each('scenario/messages.py', UNVALIDATED,
        '_kind(value)',
        '_message(err)',
        '_number(x)',
        'show(value)',
    ),
    *_each('scenario/overrides.py', UNVALIDATED,
        '_assign(data)',
        '_assign(root)',
        '_assign(value)',
        '_assign:node',
        '_assign:types',
        '_container(alternatives)',
        '_container(current)',
        '_container->',
        '_index(node)',
        '_parse->',
    ),
    *_each('scenario/ranges.py', UNVALIDATED,
        '_metadata->',
        '_metadata:literals',
        'allowed:high',
        'allowed:low',
        'plain(value)',
    ),
    *_each('scenario/scenario.py', UNVALIDATED,
        '_assignment_checks(add)',
        '_assignment_checks(t)',
        '_busy_fetch_checks(add)',
        '_clock_shorthand(value)',
        '_clock_shorthand->',
        '_cluster_checks(add)',
        '_cross_checks:per_broker',
        '_down_window_checks(add)',
        '_partition_checks(add)',
        '_request_rows_check(add)',
        '_work_checks(add)',
    ),
    *_each('scenario/structure.py', UNVALIDATED,
        'Place:types',
        '_strip(tp)',
        '_strip->',
        'field_type->',
        'is_list(tp)',
        'is_model(tp)',
        'members(tp)',
        'members->',
        'resolve:current',
    ),
    *_each('scenario/units.py', UNVALIDATED,
        'Quantity:show',
        '_bandwidth(value)',
        '_bandwidth->',
        '_first_exact(parse)',
        '_kafka_bytes(value)',
        '_kafka_bytes->',
        '_kafka_ms(value)',
        '_kafka_ms->',
        '_rate(value)',
        '_rate->',
        '_schema->',
        '_sim_duration(value)',
        '_sim_duration->',
        '_sim_size(value)',
        '_sim_size->',
        '_split(units)',
        '_whole(value)',
    ),
    *_each('scenario/yaml_source.py', UNVALIDATED,
        'LineLoader:yaml_implicit_resolvers',
        'Source:data',
        '_Builder._mapping->',
        '_Builder._mapping:out',
        '_Builder._scalar->',
        '_Builder.build->',
    ),
    *_each('sim/calls.py', SIMPY_CALLBACK,
        '_call_deliver(event)',
    ),
    *_each('sim/clock.py', SIMPY_HEAP,
        'PacedEnvironment._loop:queue',
    ),
    *_each('sim/distributions.py', SCENARIO_MODEL_BELOW,
        '_field(spec)',
        '_field->',
        'sampler_from_spec(spec)',
        'zero_arg_sampler(spec)',
    ),
    *_each('sweep/dimensions.py', SWEEP,
        'Dimension.params->',
        'Dimension:values',
        'format_value(value)',
    ),
    *_each('sweep/model.py', SWEEP,
        'SweepFile._base_not_empty(value)',
        'SweepFile._base_not_empty->',
        'SweepFile:base',
        '_metric(value)',
        '_metric->',
        '_one_of->',
        '_one_of.check(value)',
        '_one_of.check->',
        '_values(values)',
        '_values->',
        '_zip_group(group)',
        '_zip_group->',
    ),
    *_each('sweep/output.py', SWEEP,
        'read_manifest->',
        'read_manifest:manifest',
        'write_manifest(manifest)',
    ),
    *_each('sweep/plan.py', SWEEP,
        'RunSpec:params',
        'Variant:params',
        '_check_values:failures',
        'override_text(value)',
        'plan_sweep:params',
    ),
    *_each('sweep/shipping.py', SWEEP,
        'ship_kafkasim:sc',
    ),
    *_each('sweep/spark_job.py', SWEEP,
        '_ProgressPoller.__init__(done)',
        '_ProgressPoller.__init__(failed)',
    ),
    *_each('sweep/stats.py', SWEEP,
        '_is_in(values)',
    ),
    *_each('sweep/sweep.py', SWEEP,
        '_cell(value)',
        '_cell->',
        '_manifest(extra)',
        '_manifest->',
        '_mean_ci(high)',
        '_mean_ci(low)',
        '_mean_ci(mean)',
        'variant_table:row',
    ),
    *_each('sweep/task.py', SWEEP,
        '_load_scenario->',
        'as_arrow_table(data)',
        'run_counted(done)',
        'run_counted(failed)',
    ),
])


def _mentions_any(node: ast.AST) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == "Any" or isinstance(n, ast.Attribute) and n.attr == "Any":
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str):  # a string annotation
            try:
                if _mentions_any(ast.parse(n.value, mode="eval")):
                    return True
            except SyntaxError:
                pass
    return False


def _anys(tree: ast.AST, scope: str = "") -> Iterator[str]:
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{scope}.{child.name}" if scope else child.name
            a = child.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)]
            for p in params:
                if p.annotation is not None and _mentions_any(p.annotation):
                    yield f"{name}({p.arg})"
            if child.returns is not None and _mentions_any(child.returns):
                yield f"{name}->"
            yield from _anys(child, name)
        elif isinstance(child, ast.ClassDef):
            yield from _anys(child, f"{scope}.{child.name}" if scope else child.name)
        elif isinstance(child, ast.AnnAssign):
            if _mentions_any(child.annotation):
                yield f"{scope}:{ast.unparse(child.target)}"
        else:
            yield from _anys(child, scope)


def anys_in_package(root: Path = PACKAGE) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        found.update((module, where) for where in _anys(ast.parse(path.read_text(encoding="utf-8"))))
    return found


def test_the_scan_sees_every_kind_of_annotation() -> None:
    source = (
        "from typing import Any\n"
        "import typing\n"
        "class C:\n"
        "    x: dict[str, Any]\n"
        "    def m(self, a: int, *rest: Any, b: 'list[Any]', **kw: typing.Any) -> Any:\n"
        "        y: Any = 1\n"
        "        def inner(z: Any) -> None: ...\n"
        "def f(ok: int) -> int: ...\n"
    )
    assert set(_anys(ast.parse(source))) == {
        "C:x", "C.m(rest)", "C.m(b)", "C.m(kw)", "C.m->", "C.m:y", "C.m.inner(z)",
    }


def test_every_any_in_an_annotation_is_listed_with_its_reason() -> None:
    new = sorted(anys_in_package() - ALLOWED.keys())
    assert not new, (
        "`Any` in an annotation that tests/test_typed_seams.py does not list: type it (the class, a Protocol), "
        "or add it to ALLOWED with its reason:\n" + "\n".join(f"  kafkasim/{m}: {w}" for m, w in new)
    )


def test_the_list_holds_no_any_that_is_gone() -> None:
    stale = sorted(ALLOWED.keys() - anys_in_package())
    assert not stale, "typed since (remove them from ALLOWED):\n" + "\n".join(
        f"  kafkasim/{m}: {w}" for m, w in stale
    )


def test_component_seams_carry_no_any_but_the_listed_ones() -> None:
    # The component packages' seams: what is left is listed under a reason naming the issue that types it.
    seams = ("clients/", "network/", "server/", "controller/", "timer/")
    reasons = {reason for (module, _), reason in ALLOWED.items() if module.startswith(seams)}
    assert reasons <= {TAIL_STATE}, reasons
