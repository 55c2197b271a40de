/**
 * A real maintenance process for the crash test: runs the re-encryption job in
 * batches of 3 and SIGKILLs itself while sealing the 2nd row of its 2nd batch,
 * inside that batch's transaction (rows locked, nothing stored yet).
 *   TS_NODE_TRANSPILE_ONLY=1 node -r ts-node/register reencryption-child.ts <databaseUrl> <PAYLOAD_KEYS>
 */
import 'reflect-metadata';
import { InboxPayloads } from '../../src/inbox/inbox-payloads';
import { PayloadReencryptionService } from '../../src/retention/payload-reencryption.service';
import { startTestApp } from '../support/test-app';
import { ENDPOINTS } from '../inbox/worker-fixtures';

async function main(): Promise<void> {
  const [databaseUrl, keys] = process.argv.slice(2);
  const t = await startTestApp({ databaseUrl, endpoints: ENDPOINTS, env: { DATABASE_POOL_SIZE: '3', PAYLOAD_KEYS: keys } });
  const payloads = t.app.get(InboxPayloads);
  const store = payloads.store.bind(payloads);
  let sealed = 0;
  payloads.store = (...args) => {
    if (++sealed === 5) {
      process.stdout.write('inside the second batch: dying before its commit\n');
      process.kill(process.pid, 'SIGKILL');
    }
    return store(...args);
  };
  const job = t.app.get(PayloadReencryptionService);
  job.batchSize = 3;
  await job.runOnce();
  process.stdout.write('survived\n');
  process.exit(3);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(2);
});
