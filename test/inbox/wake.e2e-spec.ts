import { Injectable, Module } from '@nestjs/common';
import { HandlerOutcome, InboxEvent } from '../../src/inbox/inbox.types';
import { OnWebhookEvent } from '../../src/inbox/on-webhook-event.decorator';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';
import { drain, ENDPOINTS, inboxRow, paymentIntentEvent, postStripe, worker } from './worker-fixtures';

/** `test.slow` holds its transaction open until the test opens the gate; `test.fast` returns at once. */
@Injectable()
class GatedHandlers {
  started!: Promise<void>;
  private markStarted!: () => void;
  private gate!: Promise<void>;
  open!: () => void;

  constructor() {
    this.reset();
  }

  reset(): void {
    this.started = new Promise((resolve) => (this.markStarted = resolve));
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  @OnWebhookEvent('stripe', 'test.slow')
  async slow(): Promise<HandlerOutcome> {
    this.markStarted();
    await this.gate;
    return { kind: 'done' };
  }

  @OnWebhookEvent('stripe', 'test.fast')
  async fast(_event: InboxEvent): Promise<HandlerOutcome> {
    return { kind: 'done' };
  }
}

@Module({ providers: [GatedHandlers] })
class GatedHandlersModule {}

describe('worker wake-ups', () => {
  let db: TestDatabase;
  let t: TestApp;
  let handlers: GatedHandlers;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ databaseUrl: db.url, endpoints: ENDPOINTS, env: { DATABASE_POOL_SIZE: '6' }, imports: [GatedHandlersModule] });
    handlers = t.app.get(GatedHandlers);
  });
  afterAll(async () => {
    handlers.open();
    await t.close();
    await db.drop();
  });

  it('a new event is claimed and done while an earlier batch is still running', async () => {
    await postStripe(t, paymentIntentEvent('test.slow', { orderId: 'slow', id: 'evt_slow' }));
    const draining = drain(t);
    await handlers.started;

    await postStripe(t, paymentIntentEvent('test.fast', { orderId: 'fast', id: 'evt_fast' }));
    worker(t).wake();
    await waitFor('the later event to be done', async () => (await inboxRow(db, 'evt_fast')).status === 'done');
    expect((await inboxRow(db, 'evt_slow')).status).toBe('processing');

    handlers.open();
    await draining;
    expect((await inboxRow(db, 'evt_slow')).status).toBe('done');
  });

  it('claims an event committed by the database clock even when the worker clock is behind it', async () => {
    await postStripe(t, paymentIntentEvent('test.fast', { orderId: 'clock', id: 'evt_clock' }));
    t.clock.advance(-1_000); // a claim in the same millisecond as the commit sees a Date earlier than the row's now()
    try {
      expect(await worker(t).runOnce()).toBe(1);
    } finally {
      t.clock.advance(1_000);
    }
    expect((await inboxRow(db, 'evt_clock')).status).toBe('done');
  });

  it('stop() lets claimed work finish and starts no new claim', async () => {
    handlers.reset();
    await postStripe(t, paymentIntentEvent('test.slow', { orderId: 'slow2', id: 'evt_slow2' }));
    worker(t).wake();
    await handlers.started;
    await postStripe(t, paymentIntentEvent('test.fast', { orderId: 'fast2', id: 'evt_fast2' }));
    const stopping = worker(t).stop();
    worker(t).wake();
    handlers.open();
    await stopping;
    expect((await inboxRow(db, 'evt_slow2')).status).toBe('done');
    expect((await inboxRow(db, 'evt_fast2')).status).toBe('pending');
  });
});
