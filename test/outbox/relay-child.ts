/**
 * A real relay process for the crash test: claims and delivers one round, then
 * SIGKILLs itself after the destinations answered and before the outcomes are
 * recorded. Run with ts-node (TS_NODE_TRANSPILE_ONLY=1):
 *   node -r ts-node/register relay-child.ts <databaseUrl> <erpUrl> <emailUrl>
 */
import 'reflect-metadata';
import { Global, Module } from '@nestjs/common';
import { OutboxRelay, RELAY_FAULT_HOOK, RelayFaultHook } from '../../src/outbox/outbox-relay';
import { startTestApp } from '../support/test-app';

const crashAfterDeliveries: RelayFaultHook = {
  afterDeliveries: (entries) => {
    process.stdout.write(`delivered ${entries.length}, dying before recording\n`);
    process.kill(process.pid, 'SIGKILL');
  },
};

@Global()
@Module({ providers: [{ provide: RELAY_FAULT_HOOK, useValue: crashAfterDeliveries }], exports: [RELAY_FAULT_HOOK] })
class CrashAfterDeliveriesModule {}

async function main(): Promise<void> {
  const [databaseUrl, erpUrl, emailUrl] = process.argv.slice(2);
  const t = await startTestApp({
    databaseUrl,
    env: { ERP_URL: erpUrl, EMAIL_URL: emailUrl, DATABASE_POOL_SIZE: '2' },
    imports: [CrashAfterDeliveriesModule],
  });
  const claimed = await t.app.get(OutboxRelay).runOnce();
  process.stdout.write(`survived with ${claimed} claimed\n`);
  process.exit(3);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(2);
});
