"""Pins every piece of SimPy's private API that kafkasim.sim relies on (listed in kafkasim/sim/__init__.py).

kafkasim.sim inlines SimPy's event loop, `Timeout.__init__` and `Environment.run`'s handling of `until` for
speed, and reads/writes `_queue`, `_now`, `_ok`, `_value`, `_defused` and `RealtimeEnvironment._factor`.
A SimPy release may change any of these without notice. Each test here names what it pins, so that after
an upgrade the failure says exactly which private thing moved and which kafkasim code must follow it.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import tomllib
from collections.abc import Callable
from heapq import heappop
from pathlib import Path
from typing import Any

import pytest
import simpy
from packaging.requirements import Requirement
from simpy.core import EmptySchedule, Environment, Infinity, StopSimulation
from simpy.events import NORMAL, PENDING, URGENT, Event, EventPriority, Timeout
from simpy.rt import RealtimeEnvironment

from kafkasim.sim.calls import Call, Delivery
from kafkasim.sim.clock import PacedEnvironment

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _changed(what: str, who: str) -> str:
    return (
        f"SimPy {simpy.__version__} changed {what}. kafkasim relies on it in {who} "
        f"(see the list in kafkasim/sim/__init__.py): re-read SimPy's new code, adapt kafkasim.sim, then "
        f"update this test and the simpy bound in pyproject.toml."
    )


def test_installed_simpy_is_within_the_bound_these_pins_were_checked_against() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (simpy_requirement,) = [Requirement(d) for d in dependencies if Requirement(d).name == "simpy"]
    assert any(spec.operator == "<" for spec in simpy_requirement.specifier), (
        f"pyproject.toml's {simpy_requirement} has no upper bound: kafkasim.sim uses SimPy's private API, "
        f"so a new SimPy minor version must be checked (this file) before it is allowed"
    )
    assert simpy.__version__ in simpy_requirement.specifier, (
        f"installed SimPy {simpy.__version__} is outside pyproject.toml's {simpy_requirement}"
    )


# --- Environment internals -----------------------------------------------------------------------------


def test_environment_queue_is_a_heap_of_time_priority_eid_event_tuples() -> None:
    env = Environment()
    late = env.timeout(5)
    early = env.timeout(3)
    urgent = Event(env)
    urgent._ok = True
    urgent._value = None
    env.schedule(urgent, URGENT, 3)
    queue = getattr(env, "_queue", None)
    assert isinstance(queue, list), _changed("Environment._queue (no longer a list)", "PacedEnvironment._loop")
    assert len(queue) == 3, _changed("Environment._queue (not one entry per scheduled event)",
                                     "PacedEnvironment._loop")
    for entry in queue:
        assert isinstance(entry, tuple) and len(entry) == 4, _changed(
            f"the shape of an Environment._queue entry (got {entry!r}, expected (time, priority, eid, event))",
            "PacedEnvironment._loop (`self._now, _, _, event = heappop(queue)`)",
        )
        assert isinstance(entry[2], int), _changed("the eid in an Environment._queue entry", "PacedEnvironment._loop")
    popped = [heappop(queue) for _ in range(3)]
    assert [(t, p, e) for t, p, _, e in popped] == [(3, URGENT, urgent), (3, NORMAL, early), (5, NORMAL, late)], (
        _changed("the order of Environment._queue (not a heapq of (time, priority, eid, event))",
                 "PacedEnvironment._loop")
    )


def test_environment_now_is_the_writable_attribute_behind_now() -> None:
    env = Environment(initial_time=7)
    assert getattr(env, "_now", None) == 7, _changed("Environment._now", "PacedEnvironment._loop and run()")
    env._now = 11
    assert env.now == 11, _changed("Environment.now (no longer reads _now)", "PacedEnvironment._loop")


def test_schedule_signature_and_insertion_order_for_ties() -> None:
    params = list(inspect.signature(Environment.schedule).parameters)
    assert params == ["self", "event", "priority", "delay"], _changed(
        f"Environment.schedule's signature (now {params})", "Call, Delivery and PacedEnvironment.run"
    )
    env = Environment()
    fired: list[int] = []
    for i in range(20):
        event = Event(env)
        event._ok = True
        event._value = i
        event.callbacks.append(lambda e: fired.append(e.value))
        env.schedule(event, NORMAL, 1.0)
    env.run()
    assert fired == list(range(20)), _changed("tie-breaking at equal (time, priority) (no longer insertion order)",
                                              "every run's determinism")


def test_priority_constants() -> None:
    assert (URGENT, NORMAL) == (0, 1), _changed(f"URGENT/NORMAL (now {URGENT}/{NORMAL})", "Call, Delivery, run()")
    assert EventPriority(-1) == -1, _changed("EventPriority", "PacedEnvironment._loop's StopSimulation path")


def test_core_names_imported_by_the_clock() -> None:
    assert Infinity == float("inf"), _changed("simpy.core.Infinity", "PacedEnvironment.step")
    assert issubclass(EmptySchedule, Exception), _changed("simpy.core.EmptySchedule", "PacedEnvironment")
    assert callable(getattr(StopSimulation, "callback", None)), _changed("StopSimulation.callback",
                                                                         "PacedEnvironment.run")


# --- Event internals -----------------------------------------------------------------------------------


def test_event_ok_value_and_callbacks_through_an_event_life() -> None:
    env = Environment()
    event = Event(env)
    assert event._value is PENDING and not event.triggered, _changed("Event._value before triggering (PENDING)",
                                                                   "Call and Delivery")
    assert event.callbacks == [], _changed("Event.callbacks (a list on a new event)", "Call.cancel")
    event.succeed("v")
    assert (event._ok, event._value) == (True, "v"), _changed("Event._ok/_value after succeed()",
                                                              "Call, Delivery, PacedEnvironment._loop")
    env.run()
    assert event.callbacks is None and event.processed, _changed("Event.callbacks after processing (None)",
                                                                 "PacedEnvironment._loop and Call.cancel")
    failed = Event(env)
    error = ValueError("boom")
    failed.fail(error)
    failed.defused = True
    assert (failed._ok, failed._value) == (False, error), _changed("Event._ok/_value after fail()",
                                                                  "PacedEnvironment._loop")


def test_a_hand_built_event_is_triggered_ok_and_carries_its_value() -> None:
    env = Environment()
    event = Event(env)
    event._ok = True
    event._value = None
    assert event.triggered and event.ok and event.value is None, _changed(
        "what Event.triggered/ok/value read (no longer _value/_ok)", "Call, Delivery and PacedEnvironment.run"
    )


@pytest.mark.parametrize("env_class", [Environment, PacedEnvironment])
def test_defused_is_a_presence_flag_and_an_undefused_failure_crashes_with_a_copy(env_class: type[Any]) -> None:
    env = env_class()
    defused = Event(env)
    defused.fail(KeyError("quiet"))
    defused.defused = True
    assert hasattr(defused, "_defused"), _changed("Event.defused (no longer sets _defused)",
                                                  "PacedEnvironment._loop (`hasattr(event, '_defused')`)")
    env.run()  # a defused failure does not crash
    original = ValueError("loud", 42)
    Event(env).fail(original)
    with pytest.raises(ValueError) as raised:
        env.run()
    assert raised.value is not original and raised.value.args == ("loud", 42), _changed(
        "how an undefused failure crashes the run (a copy of the exception)", "PacedEnvironment._loop"
    )
    assert raised.value.__cause__ is original, _changed("the crash's __cause__", "PacedEnvironment._loop")


# --- Call and Delivery inline Timeout.__init__ ------------------------------------------------------------


def test_call_delivery_and_timeout_make_the_same_heap_entry_and_the_same_event_state() -> None:
    env = Environment()
    timeout = Timeout(env, 2.5)
    call = Call(env, 2.5, lambda e: None)
    delivery = Delivery(env, 2.5, lambda: None)
    entries = {id(entry[3]): entry for entry in env._queue}
    t_entry, c_entry, d_entry = entries[id(timeout)], entries[id(call)], entries[id(delivery)]
    assert t_entry[:2] == c_entry[:2] == d_entry[:2] == (2.5, NORMAL), _changed(
        f"Timeout's heap entry (now {t_entry[:2]}; Call made {c_entry[:2]})", "Call and Delivery"
    )
    assert t_entry[2] < c_entry[2] < d_entry[2], _changed("eid assignment in schedule()", "Call and Delivery")
    # Everything Timeout.__init__ sets, Call and Delivery set too (except Timeout's own _delay, used by repr).
    timeout_state = set(vars(timeout)) - {"_delay"}
    for event in (call, delivery):
        missing = timeout_state - set(vars(event))
        assert not missing, _changed(f"Timeout.__init__ (it now also sets {sorted(missing)})",
                                     f"{type(event).__name__}.__init__")
        assert (event._ok, event._value, event.triggered) == (timeout._ok, timeout._value, True), _changed(
            "the triggered state Timeout.__init__ leaves", f"{type(event).__name__}.__init__"
        )


@pytest.mark.parametrize("env_class", [Environment, PacedEnvironment])
def test_calls_and_timeouts_at_the_same_delay_fire_in_creation_order(env_class: type[Any]) -> None:
    env = env_class()
    fired: list[str] = []
    makers: list[Callable[[str], object]] = [
        lambda name: env.timeout(1.0).callbacks.append(lambda e: fired.append(name)),
        lambda name: Call(env, 1.0, lambda e: fired.append(name)),
        lambda name: Delivery(env, 1.0, lambda: fired.append(name)),
    ]
    expected = []
    for i in range(12):
        name = f"{i}"
        makers[i % 3](name)
        expected.append(name)
    env.run()
    assert fired == expected and env.now == 1.0, _changed(
        "the firing order of Timeouts and hand-built events at one time", "Call and Delivery"
    )


# --- the inlined code itself -----------------------------------------------------------------------------

# SimPy 4.1's code that kafkasim.sim re-does inline, without docstrings and comments. Compared as ASTs, so
# formatting does not matter; any change to the logic fails with a diff.
INLINED: dict[str, tuple[Callable[..., Any], str, str]] = {
    "Environment.schedule": (Environment.schedule, "Call, Delivery (their scheduling order)", """
        def schedule(self, event: Event, priority: EventPriority = NORMAL, delay: SimTime = 0) -> None:
            heappush(self._queue, (self._now + delay, priority, next(self._eid), event))
    """),
    "Environment.step": (Environment.step, "PacedEnvironment._loop", """
        def step(self) -> None:
            try:
                self._now, _, _, event = heappop(self._queue)
            except IndexError:
                raise EmptySchedule from None
            callbacks, event.callbacks = event.callbacks, None
            try:
                for callback in callbacks:
                    callback(event)
            except StopSimulation:
                event.callbacks = callbacks[callbacks.index(callback) + 1 :]
                self.schedule(event, EventPriority(-1))
                raise
            if not event._ok and not hasattr(event, '_defused'):
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc
    """),
    "Environment.run": (Environment.run, "PacedEnvironment.run", """
        def run(self, until: Optional[Union[SimTime, Event]] = None) -> Optional[Any]:
            if until is not None:
                if not isinstance(until, Event):
                    at: SimTime = until if isinstance(until, int) else float(until)
                    if at <= self.now:
                        raise ValueError(f'until ({at}) must be greater than the current simulation time')
                    until = Event(self)
                    until._ok = True
                    until._value = None
                    self.schedule(until, URGENT, at - self.now)
                elif until.callbacks is None:
                    return until.value
                until.callbacks.append(StopSimulation.callback)
            try:
                while True:
                    self.step()
            except StopSimulation as exc:
                return exc.args[0]
            except EmptySchedule:
                if until is not None:
                    assert not until.triggered
                    raise RuntimeError(
                        f'No scheduled events left but "until" event was not triggered: {until}'
                    ) from None
            return None
    """),
    "Timeout.__init__": (Timeout.__init__, "Call.__init__ and Delivery.__init__", """
        def __init__(self, env: Environment, delay: SimTime, value: Optional[Any] = None):
            if delay < 0:
                raise ValueError(f'Negative delay {delay}')
            self.env = env
            self.callbacks: EventCallbacks = []
            self._value = value
            self._delay = delay
            self._ok = True
            env.schedule(self, NORMAL, delay)
    """),
    "RealtimeEnvironment.__init__": (RealtimeEnvironment.__init__, "PacedEnvironment (_factor, env_start)", """
        def __init__(self, initial_time: SimTime = 0, factor: float = 1.0, strict: bool = True):
            Environment.__init__(self, initial_time)
            self.env_start = initial_time
            self.real_start = monotonic()
            self._factor = factor
            self._strict = strict
    """),
    "RealtimeEnvironment.sync": (RealtimeEnvironment.sync, "PacedEnvironment._reanchor", """
        def sync(self) -> None:
            self.real_start = monotonic()
    """),
    "RealtimeEnvironment.step": (RealtimeEnvironment.step, "PacedEnvironment.step", """
        def step(self) -> None:
            evt_time = self.peek()
            if evt_time is Infinity:
                raise EmptySchedule
            real_time = self.real_start + (evt_time - self.env_start) * self.factor
            if self.strict and monotonic() - real_time > self.factor:
                delta = monotonic() - real_time
                raise RuntimeError(f'Simulation too slow for real time ({delta:.3f}s).')
            while True:
                delta = real_time - monotonic()
                if delta <= 0:
                    break
                sleep(delta)
            Environment.step(self)
    """),
}


def _code(source: str) -> str:
    """The function's code as `ast.unparse` prints it, without its docstring (comments are dropped by ast)."""
    function = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(function, ast.FunctionDef)
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        function.body = function.body[1:]
    return ast.unparse(function)


@pytest.mark.parametrize("name", list(INLINED))
def test_the_simpy_code_kafkasim_inlines_is_unchanged(name: str) -> None:
    function, who, expected = INLINED[name]
    actual = _code(inspect.getsource(function))
    if actual != _code(expected):
        import difflib

        diff = "\n".join(difflib.unified_diff(_code(expected).splitlines(), actual.splitlines(),
                                              "checked", f"simpy {simpy.__version__}", lineterm=""))
        pytest.fail(_changed(f"{name}", who) + "\n" + diff)


def test_eid_is_a_counter_that_schedule_draws_from() -> None:
    import itertools

    env = simpy.Environment()
    assert isinstance(env._eid, itertools.count), _changed("Environment._eid (no longer an itertools.count)",
                                                            "Call and Delivery, which push onto the heap")
    first = next(env._eid)
    env.schedule(simpy.Event(env), NORMAL, 0)
    assert env._queue[0][2] == first + 1, _changed("how schedule() numbers events", "Call and Delivery")
