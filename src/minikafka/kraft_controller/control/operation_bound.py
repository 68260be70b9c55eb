"""Kafka's bound on one user operation: the controller refuses an operation (CreateTopics, CreatePartitions) that
would write more than MAX_RECORDS_PER_USER_OP metadata records, as its BoundedList does, and answers the whole
operation POLICY_VIOLATION. Without it one request can create partitions by the ten thousand and every broker
opens their files at once."""

from __future__ import annotations

MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVELY_LARGE = "Unable to perform excessively large batch operation."


class OperationTooLarge(Exception):
    """The operation would write more than MAX_RECORDS_PER_USER_OP records; nothing of it is written."""

    def __init__(self, records: int) -> None:
        super().__init__(f"{EXCESSIVELY_LARGE} ({records} records, at most {MAX_RECORDS_PER_USER_OP})")
        self.records = records


class RecordBudget:
    """Counts the records an operation will write, before it builds them (a huge count must not be allocated)."""

    def __init__(self) -> None:
        self.used = 0

    def take(self, records: int) -> None:
        if self.used + records > MAX_RECORDS_PER_USER_OP:
            raise OperationTooLarge(self.used + records)
        self.used += records
