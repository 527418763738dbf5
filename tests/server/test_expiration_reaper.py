"""The reaper with the real SystemTimer and DelayedOperationPurgatory on the simulated clock."""

from kafkasim.purgatory import DelayedOperation, DelayedOperationPurgatory
from kafkasim.server.expiration_reaper import ExpirationReaper
from kafkasim.sim.clock import SimClock


class Parked(DelayedOperation):
    """Never satisfied: completes only by expiring."""

    def __init__(self, delay_ms, log, name):
        super().__init__(delay_ms)
        self.log = log
        self.name = name

    def try_complete(self):
        return False

    def on_complete(self):
        pass

    def on_expiration(self):
        self.log.append((self.name, self.env_now()))


def _setup(purge_interval=1000):
    clock = SimClock()
    purgatory = DelayedOperationPurgatory("Produce", time=clock.time, purge_interval=purge_interval)
    reaper = ExpirationReaper(clock.env, purgatory)
    log = []
    return clock, purgatory, reaper, log


def _park(clock, purgatory, reaper, log, name, delay, at):
    def add(_e):
        op = Parked(delay, log, name)
        op.env_now = lambda: clock.env.now
        purgatory.try_complete_else_watch(op, [("t", 0)])
        reaper.poke()

    clock.env.timeout(at).callbacks.append(add)


def test_expirations_fire_at_their_due_time_not_on_the_200ms_grid():
    clock, purgatory, reaper, log = _setup()
    reaper.start()
    _park(clock, purgatory, reaper, log, "a", 100, at=30.0)  # exp 130: a new head mid-poll
    _park(clock, purgatory, reaper, log, "b", 5, at=131.5)  # exp 136
    _park(clock, purgatory, reaper, log, "c", 450, at=1000.0)  # level 3 -> cascades, exp 1450
    clock.env.run(until=2000)
    assert log == [("a", 130.0), ("b", 136.0), ("c", 1450.0)]
    assert purgatory.num_delayed == 0


def test_without_poke_an_expiration_waits_for_the_next_poll():
    clock, purgatory, reaper, log = _setup()
    reaper.start()

    def add(_e):
        op = Parked(10, log, "late")
        op.env_now = lambda: clock.env.now
        purgatory.try_complete_else_watch(op, [("t", 0)])  # no poke: DelayQueue never told

    clock.env.timeout(50).callbacks.append(add)
    clock.env.run(until=500)
    assert log == [("late", 200.0)]  # the 200 ms poll returned, then advance_clock ran it


def test_idle_reaper_polls_every_200ms_and_runs_the_purge_check():
    clock, purgatory, reaper, _ = _setup()
    reaper.start()
    clock.env.run(until=1001)
    assert reaper.passes == 5 and reaper.expirations == 0  # t = 200, 400, 600, 800, 1000


def test_poke_is_cheap_and_idempotent_when_nothing_changed():
    clock, purgatory, reaper, log = _setup()
    reaper.start()
    assert reaper.wake_at_ms == 200.0
    reaper.poke()
    assert reaper.wake_at_ms == 200.0
    _park(clock, purgatory, reaper, log, "a", 20, at=0.0)
    clock.env.run(until=1)
    assert reaper.wake_at_ms == 20.0
    reaper.poke()
    assert reaper.wake_at_ms == 20.0


def test_purge_runs_on_reaper_passes():
    clock, purgatory, reaper, log = _setup(purge_interval=1)
    ops = []

    def add(_e):
        for i in range(3):
            op = Parked(10_000, log, i)
            op.env_now = lambda: clock.env.now
            purgatory.try_complete_else_watch(op, [("t", i)])
            ops.append(op)
        for op in ops:
            op.force_complete()  # completed elsewhere: lingers in the watch lists until a purge
        reaper.poke()

    reaper.start()
    clock.env.timeout(10).callbacks.append(add)
    clock.env.run(until=150)
    assert purgatory.watched == 3
    clock.env.run(until=250)  # the pass at 200 purges (estimated 3 - delayed 0 > 1)
    assert purgatory.watched == 0


def test_stop_cancels_the_pending_wakeup():
    clock, purgatory, reaper, log = _setup()
    reaper.start()
    _park(clock, purgatory, reaper, log, "a", 100, at=10.0)
    clock.env.run(until=50)
    reaper.stop()
    clock.env.run(until=1000)
    assert log == [] and reaper.passes == 0
