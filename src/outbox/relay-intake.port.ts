import type { OutboxEntry } from './destinations/destination';

/**
 * The relay's side of the outbox writer's speed path, as a port the relay owns: a
 * business transaction's entries are committed already claimed for this instance's
 * relay (`handOver` gives the lease, when the relay can send at once) and given to it
 * after the commit (`handedOver`), with no claim and no NOTIFY. The writer depends on
 * this port, not on the relay.
 */
export interface RelayIntake {
  /** The lease to commit new entries under; undefined: write them pending, for any relay's claim. */
  handOver(): HandOver | undefined;
  /** The entries committed under `handOver`'s lease, now the relay's to send. */
  handedOver(handOver: HandOver, entries: OutboxEntry[]): void;
  /** Entries just committed `pending` (not handed over), by tenant and destination: before the wake that follows. */
  pendingWritten(entries: readonly PendingWrite[]): void;
}

export interface PendingWrite {
  tenantId: string;
  destination: string;
}

export const RELAY_INTAKE = Symbol('RELAY_INTAKE');

/** A lease the writer commits entries under, already claimed for this relay (OutboxRelay.handOver). */
export interface HandOver {
  lease: string;
  until: Date;
  /** Only entries for these destinations; the others are written pending. */
  destinations: string[];
  /**
   * Of those, where requests wait for a slot: there only an entry of a tenant caught up there
   * (`takes`), which starts at the next free slot in its turn (issue 34).
   */
  busy?: string[];
  /** Whether an entry of `tenantId` for `destination` is taken (undefined: all for `destinations`); asked once per entry, in order. */
  takes?: (destination: string, tenantId: string) => boolean;
  /** The relay's count of erasure notices when it gave the lease (OutboxRelay.recheckErasures). */
  erasures: number;
}
