import type { InsertClaim } from './inbox.repository';
import type { InboxEvent } from './inbox.types';

/**
 * The worker's side of acceptance's speed path, as a port the worker owns: while a lane
 * is free, an insert commits its new events already claimed under a lease of the
 * worker's (`insertClaim`), and hands them over after the commit (`handOver`), saving a
 * claim statement and a NOTIFY. Acceptance depends on this port, not on the worker.
 */
export interface WorkerIntake {
  /** A lease for the new events of one insert; undefined: insert them pending, for any worker's claim. */
  insertClaim(): InsertClaim | undefined;
  /** Events committed under an insertClaim lease, now the worker's to process. */
  handOver(events: InboxEvent[]): void;
  /** The tenants of new events an insert left pending: none of theirs is taken at an insert until a claim has caught them up. */
  leftPending(tenantIds: string[]): void;
}

export const WORKER_INTAKE = Symbol('WORKER_INTAKE');
