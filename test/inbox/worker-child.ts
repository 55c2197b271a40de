/**
 * A real worker process for the crash test (scenario 14): claims one round and
 * SIGKILLs itself inside the event's transaction, after the order update and
 * the outbox writes and before the completion and the commit. Run with ts-node:
 *   TS_NODE_TRANSPILE_ONLY=1 node -r ts-node/register worker-child.ts <databaseUrl> <orderId>
 */
import 'reflect-metadata';
import { InboxWorker } from '../../src/inbox/inbox-worker';
import { WorkerFaults } from '../../src/inbox/worker-faults';
import { startTestApp } from '../support/test-app';
import { ENDPOINTS, TENANT } from './worker-fixtures';

async function main(): Promise<void> {
  const [databaseUrl, orderId] = process.argv.slice(2);
  const t = await startTestApp({ databaseUrl, endpoints: ENDPOINTS, env: { DATABASE_POOL_SIZE: '3' } });
  t.app.get(WorkerFaults).beforeComplete = async (_event, tx) => {
    const [order] = await tx.query('SELECT status FROM orders WHERE tenant_id = $1 AND id = $2', [TENANT, orderId]);
    const [outbox] = await tx.query('SELECT count(*)::int AS n FROM outbox');
    process.stdout.write(`inside the transaction: order ${order.status}, outbox ${outbox.n}; dying before commit\n`);
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => undefined);
  };
  const worker = t.app.get(InboxWorker);
  process.stdout.write(`worker ${worker.workerId}\n`);
  const claimed = await worker.runOnce();
  process.stdout.write(`survived with ${claimed} claimed\n`);
  process.exit(3);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(2);
});
