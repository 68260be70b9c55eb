"""A member's next assignment on its way to the target assignment (Kafka's CurrentAssignmentBuilder). A member
first revokes what the target takes from it (UNREVOKED_PARTITIONS, its epoch held), then moves to the target
epoch with what it keeps plus the new partitions no other member still owns; partitions another member has yet
to revoke come later (UNRELEASED_PARTITIONS)."""

from __future__ import annotations

from minikafka.broker.consumer_group.model import NO_PARTITIONS, ConsumerMember, MemberState, Partitions


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    owned_by_others: Partitions,
    owned: Partitions | None,
) -> ConsumerMember:
    """`owned`: the partitions the member reports it owns (None: not reported, so it may own anything)."""
    if member.state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, owned_by_others, owned)
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _still_owns(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, owned_by_others, owned)
    return _next(member, member.member_epoch, target_epoch, target, owned_by_others, owned)


def _still_owns(owned: Partitions | None, partitions: Partitions) -> bool:
    return owned is None or bool(owned & partitions)


def _with_epoch(member: ConsumerMember, epoch: int, **changes: object) -> ConsumerMember:
    return member.evolve(member_epoch=epoch, previous_member_epoch=member.member_epoch, **changes)


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Partitions,
    owned_by_others: Partitions,
    owned: Partitions | None,
) -> ConsumerMember:
    kept = member.assigned & target
    revoke = member.assigned - kept
    new = target - kept
    unreleased = new & owned_by_others
    new -= unreleased
    if revoke and _still_owns(owned, revoke):
        # Revocation first: the member keeps its epoch until it reports the partitions gone.
        state = MemberState.UNREVOKED_PARTITIONS
        return _with_epoch(member, epoch, state=state, assigned=kept, pending_revocation=revoke)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with_epoch(member, target_epoch, state=state, assigned=kept | new, pending_revocation=NO_PARTITIONS)
