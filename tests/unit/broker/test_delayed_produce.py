"""The delayed-produce purgatory's pure part."""

from __future__ import annotations

from structlog.testing import capture_logs

from minikafka.broker.replica.delayed_produce import DelayedProduceQueue, PendingProduce, ProduceCompletion
from minikafka.common.errors import ErrorCode


def queue() -> DelayedProduceQueue:
    q = DelayedProduceQueue("t-0")
    for request_id, required, deadline in (("a", 5, 100), ("b", 10, 200), ("c", 15, 50)):
        q = q.add(PendingProduce(request_id, required, deadline))
    return q


def test_completes_what_the_hwm_passed_and_keeps_the_rest() -> None:
    q, done = queue().check(high_watermark=10, isr_size=2, min_insync_replicas=2, now_ms=10)
    assert done == (ProduceCompletion("a", ErrorCode.NONE), ProduceCompletion("b", ErrorCode.NONE))
    assert [r.request_id for r in q.pending] == ["c"]
    assert q.next_deadline_ms() == 50


def test_expires_at_the_deadline() -> None:
    with capture_logs() as events:
        q, done = queue().check(high_watermark=5, isr_size=2, min_insync_replicas=2, now_ms=50)
    assert done == (ProduceCompletion("a", ErrorCode.NONE), ProduceCompletion("c", ErrorCode.REQUEST_TIMED_OUT))
    assert events[0]["event"] == "produce_timed_out" and events[0]["required_offset"] == 15
    assert [r.request_id for r in q.pending] == ["b"]


def test_fails_with_not_enough_replicas_after_append_what_the_hwm_passed_with_too_small_an_isr() -> None:
    # Kafka's Partition.checkEnoughReplicasReachOffset: the error only once the HWM reached the batch.
    with capture_logs() as events:
        q, done = queue().check(high_watermark=10, isr_size=1, min_insync_replicas=2, now_ms=0)
    assert done == (
        ProduceCompletion("a", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
        ProduceCompletion("b", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    )
    assert [r.request_id for r in q.pending] == ["c"]
    assert events[0]["expected_min_isr"] == 2 and events[0]["actual_isr_size"] == 1


def test_a_shrunk_isr_keeps_produces_the_hwm_did_not_pass_waiting_until_their_deadline() -> None:
    q, done = queue().check(high_watermark=0, isr_size=1, min_insync_replicas=2, now_ms=0)
    assert done == () and [r.request_id for r in q.pending] == ["a", "b", "c"]
    q, done = q.check(high_watermark=0, isr_size=1, min_insync_replicas=2, now_ms=50)
    assert done == (ProduceCompletion("c", ErrorCode.REQUEST_TIMED_OUT),)
    q, done = q.check(high_watermark=5, isr_size=2, min_insync_replicas=2, now_ms=60)
    assert done == (ProduceCompletion("a", ErrorCode.NONE),)


def test_fail_all_on_leadership_change() -> None:
    q, done = queue().fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert q.pending == () and q.next_deadline_ms() is None
    assert [c.request_id for c in done] == ["a", "b", "c"]
    assert all(c.error == ErrorCode.NOT_LEADER_OR_FOLLOWER for c in done)
