"""``Call``: the engine's scheduled callback, and cancelling one."""

from __future__ import annotations

import simpy

from kafkasim.sim.calls import Call


def test_cancel_before_it_runs_makes_it_a_no_op() -> None:
    env = simpy.Environment()
    ran: list[float] = []
    call = Call(env, 5.0, lambda _e: ran.append(env.now))
    call.cancel()
    env.run()
    assert ran == []


def test_cancelling_a_call_that_already_ran_does_nothing() -> None:
    # SimPy drops a processed event's callback list (None). A broker's expiration reaper cancelled its wake-up
    # after that wake-up had run during a pause: the compiled build, which types the list as a list, raised
    # TypeError ("list object expected; got None") and stopped the run (failover stress --unclean, seed 165).
    env = simpy.Environment()
    ran: list[float] = []
    call = Call(env, 1.0, lambda _e: ran.append(env.now))
    env.run()
    assert ran == [1.0] and call.processed
    call.cancel()
    call.cancel()
