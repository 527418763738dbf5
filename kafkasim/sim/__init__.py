"""The SimPy kernel of kafkasim: the clock (`clock`), the scheduling primitives (`calls`), random streams
and samplers. Sits beside `timer/` at the bottom of the layers; every SimPy user is above it.

This package is the only place allowed to touch SimPy's private API. It does so for speed: the event
loop and the one-callback events below are SimPy's own code inlined, which saves several method calls per
event on the hot path. The private things relied upon (pinned by tests/sim/test_simpy_private_api.py,
which fails naming the one that changed; pyproject.toml bounds simpy to the minor version it was checked
against):

- ``Environment._queue``: a `heapq` list of ``(time, priority, eid, event)`` tuples; the loop in
  ``clock.PacedEnvironment._loop`` pops it directly.
- ``Environment._now``: the current time, written by that loop and read by ``PacedEnvironment`` (and by
  ``clock.SimTime``); ``Environment.now`` is a property over it, which ``PacedEnvironment`` shadows with
  a plain attribute that its loop and ``step`` keep equal to ``_now`` (a property read is a call).
- ``Environment.schedule(event, priority, delay)`` pushing ``(now + delay, priority, next(eid), event)``,
  so that ties at one time and priority fire in insertion order; ``calls.Call`` and ``calls.Delivery``
  do that push themselves (``Environment._eid``, an ``itertools.count``).
- ``Environment.step`` (inlined in ``PacedEnvironment._loop``): callbacks swapped for None before they
  run; on `StopSimulation` the remaining callbacks are rescheduled at priority -1; a failed event that
  is not defused crashes the run with a copy of its exception.
- ``Environment.run``'s handling of ``until`` (inlined in ``PacedEnvironment.run``): a hand-built
  triggered event scheduled URGENT at ``until``, with ``StopSimulation.callback`` appended.
- ``Event._ok`` / ``Event._value`` (set by hand on events built without ``Event.__init__``; ``_value``
  is ``PENDING`` until triggered), ``Event.callbacks`` (a list, None once processed), and ``_defused``
  (its mere presence means "defused").
- ``Timeout.__init__`` (inlined in ``calls.Call`` and ``calls.Delivery``): sets ``env``, ``callbacks``,
  ``_value``, ``_ok`` and calls ``env.schedule(self, NORMAL, delay)`` (itself inlined there).
- ``simpy.events.NORMAL`` / ``URGENT`` / ``EventPriority``; ``simpy.core.EmptySchedule``, ``Infinity``,
  ``StopSimulation`` (and its ``callback``).
- ``RealtimeEnvironment``'s ``_factor``, ``env_start``, ``real_start``, ``sync()`` and the pacing
  computation of its ``step()`` (re-done in ``PacedEnvironment.step`` with sliced sleeps).
"""
