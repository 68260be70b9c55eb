"""Which transaction protocol a transactional producer speaks, chosen as Kafka's Java producer (4.0) chooses it
(TransactionManager's isTransactionV2Enabled): from the cluster's finalized `transaction.version` in ApiVersions,
read when the producer initializes and again as each transaction ends, so a transaction keeps the protocol it began
with. A finalized level older than the one already read (a broker behind on the metadata) changes nothing. When the
level turns 2 after initialization, the producer bumps its epoch (InitProducerId with its producer id and epoch)
before its first version-2 transaction, so no partition of an older transaction counts as added to it.

Version 2 (KIP-890 part 2): no AddPartitionsToTxn (a transactional Produce v12 has the leader add the partition),
EndTxn v5, whose answer gives the producer id and epoch to go on with. Otherwise AddPartitionsToTxn v3, Produce v9
and EndTxn v3, the epoch kept."""

from __future__ import annotations

from dataclasses import dataclass

TRANSACTION_VERSION = "transaction.version"


@dataclass(frozen=True)
class ProtocolRead:
    protocol: TransactionProtocol
    epoch_bump_required: bool  # Kafka's clientSideEpochBumpRequired: an upgrade to version 2 since initialization


@dataclass(frozen=True)
class TransactionProtocol:
    v2: bool = False
    features_epoch: int = -1  # the FinalizedFeaturesEpoch the level was read at

    def read(self, finalized: dict[str, int], features_epoch: int, initializing: bool) -> ProtocolRead:
        if features_epoch <= self.features_epoch:
            return ProtocolRead(self, False)
        now = TransactionProtocol(finalized.get(TRANSACTION_VERSION, 0) >= 2, features_epoch)
        return ProtocolRead(now, not initializing and now.v2 and not self.v2)

    @property
    def adds_partitions(self) -> bool:
        """Whether the producer sends AddPartitionsToTxn itself."""
        return not self.v2

    @property
    def produce_version(self) -> int:
        return 12 if self.v2 else 9

    @property
    def end_txn_version(self) -> int:
        return 5 if self.v2 else 3
