import type { EventEmitter } from 'node:events';

/**
 * PostgreSQL's warning when a commit's wait for a synchronous standby is cancelled
 * (pg_cancel_backend, a cancel request): the transaction is committed on the primary and
 * maybe not on the standby, yet the statement reports success. Matched in English, the
 * server's default lc_messages; a server set to another language sends it translated.
 */
const SYNC_WAIT_CANCELLED = /^canceling (the )?wait for synchronous replication/;

const unreplicated = new WeakSet<object>();

/** On every pooled connection: remembers that a commit on `client` came back unreplicated. */
export function watchReplicationNotices(client: EventEmitter): void {
  client.on('notice', (notice: { message?: unknown }) => {
    if (typeof notice?.message === 'string' && SYNC_WAIT_CANCELLED.test(notice.message)) unreplicated.add(client);
  });
}

/** Before a statement whose commit is checked: a mark left by earlier, unchecked work is not its own. */
export function forgetReplicationNotice(client: object): void {
  unreplicated.delete(client);
}

/**
 * After a commit on `client`: throws when its wait for the standby was cancelled. The commit
 * may be lost at a failover, so its caller must not answer as if it were durable (a webhook
 * gets 503 and is sent again: a duplicate if the commit survived, accepted if it did not).
 */
export function assertReplicated(client: object): void {
  if (unreplicated.delete(client)) throw new CommitNotReplicatedError();
}

/** SQLSTATE 08007, transaction_resolution_unknown: "database unavailable" to every caller (503, retry). */
export class CommitNotReplicatedError extends Error {
  readonly code = '08007';
  constructor() {
    super('the commit was not confirmed by the synchronous standby (its wait was cancelled): outcome unknown at a failover');
    this.name = 'CommitNotReplicatedError';
  }
}
