import { InitialSchema1764460800000 } from './1764460800000-initial-schema';
import { RetentionIndexes1764547200000 } from './1764547200000-retention-indexes';
import { QueueAutovacuum1764633600000 } from './1764633600000-queue-autovacuum';
import { InboxSourceFacts1764720000000 } from './1764720000000-inbox-source-facts';
import { OutboundOrder1764806400000 } from './1764806400000-outbound-order';
import { ProviderReads1764892800000 } from './1764892800000-provider-reads';
import { Reconciliation1764893800000 } from './1764893800000-reconciliation';
import { PayloadEncryption1764979200000 } from './1764979200000-payload-encryption';
import { AttemptHistory1765065600000 } from './1765065600000-attempt-history';
import { TimelineIndexes1765065601000 } from './1765065601000-timeline-indexes';
import { TraceContext1765152000000 } from './1765152000000-trace-context';
import { ExpectRows1765238400000 } from './1765238400000-expect-rows';
import { ReconciliationOutcomes1765325000000 } from './1765325000000-reconciliation-outcomes';
import { LifecycleIndexes1765411200000 } from './1765411200000-lifecycle-indexes';
import { FairClaimIndexes1765500004817 } from './1765500004817-fair-claim-indexes';

/** Every migration, oldest first. Listed explicitly so ts-jest and the compiled build load the same set. */
export const MIGRATIONS = [
  InitialSchema1764460800000,
  RetentionIndexes1764547200000,
  QueueAutovacuum1764633600000,
  InboxSourceFacts1764720000000,
  OutboundOrder1764806400000,
  ProviderReads1764892800000,
  Reconciliation1764893800000,
  PayloadEncryption1764979200000,
  AttemptHistory1765065600000,
  TimelineIndexes1765065601000,
  TraceContext1765152000000,
  ExpectRows1765238400000,
  ReconciliationOutcomes1765325000000,
  LifecycleIndexes1765411200000,
  FairClaimIndexes1765500004817,
];
