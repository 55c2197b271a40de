import { DataSource } from 'typeorm';
import { runInTransaction, UnitOfWork } from '../../src/database/unit-of-work';
import { effectsOf } from '../../src/orders/order-effects';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { HOLD_RECHECK_MS, OutboxRepository } from '../../src/outbox/outbox.repository';
import { OutboxWriter } from '../../src/outbox/outbox-writer';
import { FakeDestination, startFakeEmail, startFakeErp } from '../support/fake-destinations';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { paidOrder as order } from './outbox-rows';
import { waitFor } from '../support/wait-for';

const LEASE_MS = 5_000;

/**
 * An instance with the relay role commits the entries its business transactions write
 * already claimed by its own relay (no NOTIFY, no claim) and sends them after the
 * commit; what a savepoint undid, what its aggregate holds back, and what a destination's
 * shared state does not admit are never handed over; a lease keeps the guarantee when
 * the instance dies before sending.
 */
describe('outbox: entries handed over to the relay of the instance that writes them', () => {
  let db: TestDatabase;
  let erp: FakeDestination;
  let email: FakeDestination & { sendUrl: string };
  let scheduled: TestApp;
  let other: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    erp = await startFakeErp();
    email = await startFakeEmail();
    const env = {
      ERP_URL: erp.url,
      EMAIL_URL: email.sendUrl,
      RELAY_LEASE_MS: String(LEASE_MS),
      RELAY_POLL_MS: '600000',
      RELAY_TIMEOUT_MS: '800',
    };
    scheduled = await startTestApp({ databaseUrl: db.url, env: { ...env, ROLES: 'api,relay' } });
    other = await startTestApp({ databaseUrl: db.url, env });
    // The scheduled relay's first round has read every destination's shared state.
    await waitFor('the destinations to be known', async () => (await db.query('SELECT 1 FROM outbox_destinations')).length === 2);
    await relay(scheduled).runOnce();
  });
  afterAll(async () => {
    await scheduled?.close();
    await other?.close();
    await erp?.close();
    await email?.close();
    await db?.drop();
  });

  const relay = (t: TestApp) => t.app.get(OutboxRelay);

  const paid = (o: string) => `erp:order-paid:acme:${o}`;
  const refunded = (o: string) => `erp:order-refunded:acme:${o}`;
  const receipt = (o: string) => `email:receipt:acme:${o}`;

  /** The business transaction's write through the real writer; `more` runs in the same transaction after it. */
  function transition(t: TestApp, orderId: string, to: 'paid' | 'refunded', more?: (tx: UnitOfWork) => Promise<unknown>): Promise<unknown> {
    const effects = effectsOf(order(orderId), to, {
      paymentId: `pi_${orderId}`,
      occurredAt: '2026-12-01T10:00:00.000Z',
      sourceEventId: '1',
    });
    return runInTransaction(t.app.get(DataSource), async (tx) => {
      await t.app.get(OutboxWriter).write(tx, effects);
      await more?.(tx);
    });
  }

  /** The next poll, on `other`: a claim that raced a delivery's record may have held its successor back for HOLD_RECHECK_MS. */
  async function pollPastHold(): Promise<void> {
    other.clock.advance(HOLD_RECHECK_MS);
    try {
      await relay(other).runOnce();
    } finally {
      other.clock.offsetMs = 0;
    }
  }

  const rows = (keys: string[]) =>
    db.query<{ operation_key: string; status: string; attempts: number; locked_by: string | null; outcome_unknown: boolean }>(
      'SELECT operation_key, status, attempts, locked_by, outcome_unknown FROM outbox WHERE operation_key = ANY($1) ORDER BY operation_key',
      [keys],
    );

  it('the entries of a business transaction are committed claimed by the relay and sent without a claim or a NOTIFY', async () => {
    const claims = jest.spyOn(scheduled.app.get(OutboxRepository), 'claim');
    try {
      await transition(scheduled, 'h1', 'paid');
      await waitFor('both deliveries', async () => (await rows([paid('h1'), receipt('h1')])).every((r) => r.status === 'delivered'));
      expect(claims).not.toHaveBeenCalled();
    } finally {
      claims.mockRestore();
    }
    expect(erp.posts().filter((r) => r.key === paid('h1'))).toHaveLength(1);
    expect(email.posts().filter((r) => r.key === receipt('h1'))).toHaveLength(1);
    const history = await db.query<{ lease: string; attempt: number; outcome: string }>(
      `SELECT a.lease, a.attempt, a.outcome FROM outbox_attempts a JOIN outbox o ON o.id = a.outbox_id WHERE o.operation_key = $1`,
      [paid('h1')],
    );
    expect(history).toEqual([
      { lease: expect.stringMatching(new RegExp(`^${relay(scheduled).relayId}:`)), attempt: 1, outcome: 'delivered' },
    ]);
  });

  it('entries a rolled-back savepoint undid are never sent; the rest of the transaction is', async () => {
    await transition(scheduled, 'h2', 'paid', async (tx) => {
      await tx.query('SAVEPOINT undone');
      const effects = effectsOf(order('h2-undone'), 'paid', {
        paymentId: 'pi_x',
        occurredAt: '2026-12-01T10:00:00.000Z',
        sourceEventId: '1',
      });
      await scheduled.app.get(OutboxWriter).write(tx, effects);
      await tx.query('ROLLBACK TO SAVEPOINT undone');
    });
    await waitFor('the kept entries delivered', async () =>
      (await rows([paid('h2'), receipt('h2')])).every((r) => r.status === 'delivered'),
    );
    expect(await rows([paid('h2-undone'), receipt('h2-undone')])).toEqual([]);
    expect(erp.posts().filter((r) => r.key === paid('h2-undone'))).toEqual([]);
    expect(email.posts().filter((r) => r.key === receipt('h2-undone'))).toEqual([]);
  });

  it('an entry behind an undelivered one of its order is written pending, and reaches the destination after it', async () => {
    // The paid entry is written while the relay takes no hand-over (as by another instance), and not sent yet.
    const handOver = jest.spyOn(relay(scheduled), 'handOver').mockReturnValue(undefined);
    erp.failNext(1, { kind: 'hold' });
    try {
      await transition(scheduled, 'h3', 'paid');
    } finally {
      handOver.mockRestore();
    }
    await waitFor('the paid request held at the ERP', async () => erp.requests.some((r) => r.key === paid('h3')));
    await transition(scheduled, 'h3', 'refunded');
    const [refund] = await rows([refunded('h3')]);
    expect(refund).toMatchObject({ status: 'pending', attempts: 0, locked_by: null });
    erp.release(200);
    await waitFor('the paid operation delivered', async () => (await rows([paid('h3')]))[0].status === 'delivered');
    await pollPastHold();
    await waitFor('both ERP operations delivered', async () =>
      (await rows([paid('h3'), refunded('h3')])).every((r) => r.status === 'delivered'),
    );
    const sent = erp
      .posts()
      .map((r) => r.key)
      .filter((k) => k?.endsWith(':h3'));
    expect(sent).toEqual([paid('h3'), refunded('h3')]);
  });

  it('of two operations of one order written together, only the first is handed over; the ERP gets them in order', async () => {
    const at = { paymentId: 'pi_h7', occurredAt: '2026-12-01T10:00:00.000Z', sourceEventId: '1' };
    const handedOver = jest.spyOn(relay(scheduled), 'handedOver');
    const pendingWritten = jest.spyOn(relay(scheduled), 'pendingWritten');
    try {
      await runInTransaction(scheduled.app.get(DataSource), (tx) =>
        scheduled.app.get(OutboxWriter).write(tx, [...effectsOf(order('h7'), 'paid', at), ...effectsOf(order('h7'), 'refunded', at)]),
      );
      await waitFor('the hand-over', async () => handedOver.mock.calls.length === 1);
      const keys = handedOver.mock.calls[0][1].map((e) => e.operationKey).sort();
      expect(keys).toContain(paid('h7'));
      expect(keys).not.toContain(refunded('h7'));
      // The relay hears which tenants' entries were left pending, and where (a claim for them may pass others over).
      expect(pendingWritten).toHaveBeenCalledTimes(1);
      const left = pendingWritten.mock.calls[0][0];
      expect(left).toHaveLength(2);
      expect(left).toEqual(
        expect.arrayContaining([
          { tenantId: 'acme', destination: 'erp' },
          { tenantId: 'acme', destination: 'email' },
        ]),
      );
    } finally {
      handedOver.mockRestore();
      pendingWritten.mockRestore();
    }
    await waitFor('the paid operation delivered', async () => (await rows([paid('h7')]))[0].status === 'delivered');
    await pollPastHold();
    await waitFor('the refund delivered', async () => (await rows([refunded('h7')]))[0].status === 'delivered');
    expect(
      erp
        .posts()
        .map((r) => r.key)
        .filter((k) => k?.endsWith(':h7')),
    ).toEqual([paid('h7'), refunded('h7')]);
  });

  it('a destination whose shared state does not admit it at once (circuit open) gets its entries pending; the others are handed over', async () => {
    await db.query(
      `UPDATE outbox_destinations SET circuit = 'open', retry_at = now() + interval '1 hour', version = version + 1 WHERE destination = 'erp'`,
    );
    await relay(scheduled).runOnce(); // a round reads the shared state
    try {
      await transition(scheduled, 'h4', 'paid');
      await waitFor('the receipt delivered', async () => (await rows([receipt('h4')]))[0]?.status === 'delivered');
      expect(await rows([paid('h4')])).toEqual([expect.objectContaining({ status: 'pending', locked_by: null })]);
      expect(erp.posts().filter((r) => r.key === paid('h4'))).toEqual([]);
    } finally {
      await db.query(`UPDATE outbox_destinations SET circuit = 'closed', retry_at = NULL, version = version + 1 WHERE destination = 'erp'`);
      await relay(scheduled).runOnce();
    }
    await waitFor('the paid entry delivered once the circuit closes', async () => (await rows([paid('h4')]))[0].status === 'delivered');
  });

  it('a destination that has failed (a down answer counted, circuit still closed) gets its entries pending until it answers again', async () => {
    await db.query(`UPDATE outbox_destinations SET failures = 1, version = version + 1 WHERE destination = 'erp'`);
    await relay(scheduled).runOnce(); // a round reads the shared state
    const handedOver = jest.spyOn(relay(scheduled), 'handedOver');
    try {
      await transition(scheduled, 'h8', 'paid');
      await waitFor('the hand-over', async () => handedOver.mock.calls.length === 1);
      expect(handedOver.mock.calls[0][1].map((e) => e.operationKey)).toEqual([receipt('h8')]);
    } finally {
      handedOver.mockRestore();
      await db.query(`UPDATE outbox_destinations SET failures = 0, version = version + 1 WHERE destination = 'erp'`);
      await relay(scheduled).runOnce();
    }
    await waitFor('both delivered', async () => (await rows([paid('h8'), receipt('h8')])).every((r) => r.status === 'delivered'));
  });

  it('if the instance dies between the commit and the sends, any relay takes the entries over once the lease expires, outcome unknown, and each is applied once', async () => {
    // As if the process died right after the commit: the handed-over entries are lost with it.
    const handedOver = jest.spyOn(relay(scheduled), 'handedOver').mockImplementation(() => undefined);
    try {
      await transition(scheduled, 'h5', 'paid');
      await waitFor('the hand-over', async () => handedOver.mock.calls.length === 1);
    } finally {
      handedOver.mockRestore();
    }
    const held = await rows([paid('h5'), receipt('h5')]);
    expect(held).toEqual([
      expect.objectContaining({
        status: 'delivering',
        attempts: 1,
        locked_by: expect.stringMatching(new RegExp(`^${relay(scheduled).relayId}:`)),
      }),
      expect.objectContaining({ status: 'delivering', attempts: 1, locked_by: held[0].locked_by }),
    ]);

    expect(await relay(other).runOnce()).toBe(0); // the lease holds until it expires
    other.clock.advance(LEASE_MS + 1_000);
    expect(await relay(other).runOnce()).toBe(2);
    expect(await rows([paid('h5'), receipt('h5')])).toEqual([
      expect.objectContaining({ status: 'delivered', attempts: 2, outcome_unknown: false }),
      expect.objectContaining({ status: 'delivered', attempts: 2, outcome_unknown: false }),
    ]);
    expect([...erp.effects.keys()].filter((k) => k === paid('h5'))).toHaveLength(1);
    expect([...email.effects.keys()].filter((k) => k === receipt('h5'))).toHaveLength(1);
  });

  it('entries committed after their relay began stopping are handed back pending at once, never sent by the stopping instance', async () => {
    const stopping = await startTestApp({
      databaseUrl: db.url,
      env: { ERP_URL: erp.url, EMAIL_URL: email.sendUrl, RELAY_LEASE_MS: '600000', RELAY_POLL_MS: '600000', ROLES: 'api,relay' },
    });
    try {
      await relay(stopping).runOnce();
      const before = erp.requests.length;
      // The transaction takes its hand-over at its first write; the relay stops before it commits.
      await transition(stopping, 'h-stop', 'paid', () => relay(stopping).stop());
      await waitFor('the entries handed back', async () => {
        const rows = await db.query(`SELECT 1 FROM outbox WHERE operation_key = ANY($1) AND status = 'pending' AND locked_by IS NULL`, [
          [paid('h-stop'), receipt('h-stop')],
        ]);
        return rows.length === 2;
      });
      expect(await db.query(`SELECT attempts, last_error FROM outbox WHERE operation_key = $1`, [paid('h-stop')])).toEqual([
        { attempts: 0, last_error: 'deferred: the relay was stopping' },
      ]);
      expect(erp.requests.length).toBe(before);
    } finally {
      await stopping.close();
    }
    // Any relay takes them at once (a lease of 10 minutes would have held them that long).
    await relay(other).runOnce();
    expect(erp.posts(paid('h-stop'))).toHaveLength(1);
  });

  it('an instance without the relay role writes pending entries for any relay to claim', async () => {
    const handOver = jest.spyOn(relay(other), 'handOver');
    await transition(other, 'h6', 'paid');
    expect(handOver).toHaveReturnedWith(undefined);
    // The scheduled relay, woken by NOTIFY, may have claimed them already: never under a lease of `other`.
    for (const row of await rows([paid('h6'), receipt('h6')])) expect(row.locked_by?.startsWith(relay(other).relayId) ?? false).toBe(false);
    await waitFor('both delivered', async () => (await rows([paid('h6'), receipt('h6')])).every((r) => r.status === 'delivered'));
  });
});
