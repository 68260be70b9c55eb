"""A coordinator's periodic check: first due one interval after the first tick, then once per interval."""

from minikafka.broker.coordinator_runtime.interval import IntervalCheck


def test_due_one_interval_after_the_first_tick_then_once_per_interval() -> None:
    check = IntervalCheck(500)
    assert [check.due(now) for now in (1000, 1400, 1500, 1600, 1999, 2000, 2100)] == [
        False,
        False,
        True,
        False,
        False,
        True,
        False,
    ]
