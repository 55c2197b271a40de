import { request as httpRequest } from 'node:http';
import { connect, Socket } from 'node:net';
import request from 'supertest';
import { Client } from 'pg';
import { signStripe, stripeEvent } from '../support/signers';
import { createTestDatabase, TestDatabase } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';
import { waitFor } from '../support/wait-for';

const SECRET = 'whsec_intake_limits_secret';
const endpoints = [{ id: 'stripe-acme', provider: 'stripe', tenantId: 'acme', secrets: [{ label: 'k1', value: SECRET }] }];

/** A raw connection: what it received and whether the server closed it. */
interface Raw {
  socket: Socket;
  received: () => string;
  closed: () => boolean;
}

/** A raw connection to the app, from `localAddress` (any of 127.0.0.0/8 on loopback: a client of its own). */
function open(url: string, localAddress?: string): Promise<Raw> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let text = '';
    let closed = false;
    const socket = connect({ port: Number(port), host: hostname, localAddress }, () =>
      resolve({ socket, received: () => text, closed: () => closed }),
    );
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('close', () => (closed = true));
    socket.on('error', (e) => (closed ? undefined : reject(e)));
  });
}

/** The head of a signed webhook request, its body not sent. */
function head(signed: { headers: Record<string, string>; body: string }): string {
  const lines = Object.entries(signed.headers).map(([k, v]) => `${k}: ${v}`);
  return [`POST /webhooks/stripe-acme HTTP/1.1`, 'Host: x', ...lines, `Content-Length: ${Buffer.byteLength(signed.body)}`, '', ''].join(
    '\r\n',
  );
}

const post = (t: TestApp, signed: { headers: Record<string, string>; body: string }) =>
  request(t.url).post('/webhooks/stripe-acme').set(signed.headers).send(signed.body);

type Answer = { status: number; reason?: string };

/** A signed webhook sent from `localAddress` to `endpointId`: its status and reason. */
function postFrom(
  t: TestApp,
  localAddress: string,
  signed: { headers: Record<string, string>; body: string },
  endpointId = 'stripe-acme',
): Promise<Answer> {
  const { hostname, port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: hostname,
        port: Number(port),
        localAddress,
        method: 'POST',
        path: `/webhooks/${endpointId}`,
        headers: { ...signed.headers, 'Content-Length': Buffer.byteLength(signed.body) },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, reason: JSON.parse(text).reason }));
      },
    );
    req.on('error', reject);
    req.end(signed.body);
  });
}

/** Everything before authentication is bounded: deadlines, bytes buffered, connections, the accept queue. */
describe('Intake limits before authentication', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    await db.query('TRUNCATE webhook_inbox');
  });

  describe('deadlines', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ databaseUrl: db.url, endpoints, env: { HTTP_HEADERS_TIMEOUT_MS: '300', HTTP_BODY_TIMEOUT_MS: '800' } });
    });
    afterAll(async () => t?.close());

    it('headers trickling past the header deadline: 408 and the connection closed', async () => {
      const raw = await open(t.url);
      raw.socket.write('POST /webhooks/stripe-acme HTTP/1.1\r\nHost: x\r\n');
      const trickle = setInterval(() => raw.socket.writable && raw.socket.write('X-A: b\r\n'), 100);
      try {
        await waitFor('the server to close a connection whose headers never end', async () => raw.closed(), 5000);
      } finally {
        clearInterval(trickle);
      }
      expect(raw.received()).toMatch(/^HTTP\/1\.1 408/);
    });

    it('a body trickling past the body deadline: 408 or closed, nothing written', async () => {
      const signed = signStripe(stripeEvent({ id: 'evt_slow_body' }), SECRET);
      const raw = await open(t.url);
      raw.socket.write(head(signed));
      let sent = 0;
      const trickle = setInterval(() => raw.socket.writable && sent < signed.body.length - 1 && raw.socket.write(signed.body[sent++]), 50);
      try {
        await waitFor('the server to close a connection whose body never ends', async () => raw.closed(), 5000);
      } finally {
        clearInterval(trickle);
      }
      expect(raw.received()).not.toMatch(/^HTTP\/1\.1 200/);
      expect(await db.query('SELECT id FROM webhook_inbox')).toEqual([]);
    });
  });

  describe('bytes buffered and connections', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({
        databaseUrl: db.url,
        endpoints,
        env: { INGEST_BUFFER_MAX_BYTES: '2000', INGEST_BUFFER_PER_CLIENT_MAX_BYTES: '2000', HTTP_MAX_CONNECTIONS: '4' },
      });
    });
    afterAll(async () => t?.close());

    it('past the bytes buffered across webhook requests in flight: 503 with Retry-After, nothing written', async () => {
      const big = signStripe(stripeEvent({ id: 'evt_big', padding: 'x'.repeat(1950) }), SECRET);
      const raw = await open(t.url);
      raw.socket.write(head(big) + big.body.slice(0, 1900));
      try {
        await waitFor('the server to buffer the first 1,900 bytes', async () => (await gauge(t, 'webhook_intake_buffered_bytes')) >= 1900);
        const res = await post(t, signStripe(stripeEvent({ id: 'evt_small' }), SECRET));
        expect(res.status).toBe(503);
        expect(res.body.reason).toBe('intake_busy');
        expect(res.headers['retry-after']).toBeDefined();
        expect(await db.query('SELECT id FROM webhook_inbox')).toEqual([]);
      } finally {
        raw.socket.destroy();
      }
      // Released with the request: the next one is accepted.
      await waitFor('the budget to be given back', async () => (await post(t, signStripe(stripeEvent(), SECRET))).status === 200);
    });

    it('past the connection cap: 503 with Retry-After on the extra connection', async () => {
      const idle = await Promise.all([1, 2, 3, 4].map(() => open(t.url)));
      try {
        const extra = await open(t.url);
        extra.socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
        await waitFor('an answer on the extra connection', async () => extra.received().includes('\r\n\r\n'), 5000);
        expect(extra.received()).toMatch(/^HTTP\/1\.1 503/);
        expect(extra.received()).toMatch(/\r\nRetry-After: \d+\r\n/i);
        extra.socket.destroy();
      } finally {
        for (const r of idle) r.socket.destroy();
      }
      await waitFor('connections to be given back', async () => (await request(t.url).get('/health/live')).status === 200);
    });
  });

  describe('per-client shares', () => {
    let t: TestApp;
    let locker: Client;
    beforeAll(async () => {
      t = await startTestApp({
        databaseUrl: db.url,
        endpoints,
        env: {
          INGEST_BUFFER_MAX_BYTES: '40000',
          INGEST_BUFFER_PER_CLIENT_MAX_BYTES: '10000',
          INGEST_FLUSHERS: '1',
          INGEST_BATCH_MAX: '1',
          INGEST_QUEUE_MAX: '8',
          INGEST_QUEUE_PER_CLIENT_MAX: '2',
          INGEST_QUEUE_WAIT_MS: '5000',
        },
      });
      locker = new Client({ connectionString: db.url });
      await locker.connect();
    });
    afterAll(async () => {
      await locker?.end();
      await t?.close();
    });

    it('one address holding idle partial bodies past its share of the buffer: it gets 503 intake_client_busy, another address is accepted at once', async () => {
      // 12 bodies of 4,500 declared bytes, 4,000 sent, then idle: 48,000 bytes would fill the whole budget.
      const idle: Raw[] = [];
      try {
        for (let i = 0; i < 12; i++) {
          const big = signStripe(stripeEvent({ id: `evt_hog_${i}`, padding: 'x'.repeat(4300) }), SECRET);
          const raw = await open(t.url, '127.0.0.2');
          raw.socket.write(head(big) + big.body.slice(0, 4000));
          idle.push(raw);
        }
        const answered = () => idle.filter((r) => r.received() !== '').length;
        await waitFor(
          'every idle body to be buffered or refused',
          async () => (await gauge(t, 'webhook_intake_buffered_bytes')) + 4000 * answered() >= 48000,
        );

        const started = Date.now();
        const genuine = await postFrom(t, '127.0.0.3', signStripe(stripeEvent({ id: 'evt_genuine' }), SECRET));
        expect(genuine).toEqual({ status: 200, reason: undefined });
        expect(Date.now() - started).toBeLessThan(1000);

        // Its share (10,000 bytes) holds two of the bodies; the rest were refused as they came.
        const refused = idle.filter((r) => r.received().startsWith('HTTP/1.1 503'));
        expect(refused.length).toBe(10);
        expect(refused[0].received()).toContain('"reason":"intake_client_busy"');
        expect(await gauge(t, 'webhook_intake_buffered_bytes')).toBe(8000);
        // The hogging address itself is refused while its share is full.
        const more = await postFrom(t, '127.0.0.2', signStripe(stripeEvent({ id: 'evt_hog_more', padding: 'x'.repeat(3000) }), SECRET));
        expect(more).toEqual({ status: 503, reason: 'intake_client_busy' });
      } finally {
        for (const r of idle) r.socket.destroy();
      }
      expect((await db.query<{ event_id: string }>('SELECT event_id FROM webhook_inbox')).map((r) => r.event_id)).toEqual(['evt_genuine']);
    });

    it('one address past its share of the accept queue: 503 intake_client_busy at once, another address still queued and accepted', async () => {
      const committed = await shareFilled(t, db, locker, 'intake_client_busy', {
        fill: () => ['evt_qa1', 'evt_qa2'].map((id) => postFrom(t, '127.0.0.2', signStripe(stripeEvent({ id }), SECRET))),
        over: () => postFrom(t, '127.0.0.2', signStripe(stripeEvent({ id: 'evt_qa3' }), SECRET)),
        other: () => postFrom(t, '127.0.0.3', signStripe(stripeEvent({ id: 'evt_qb1' }), SECRET)),
      });
      expect(committed).toEqual(['evt_qa1', 'evt_qa2', 'evt_qb1']);
    });
  });

  describe('per-endpoint shares (issue 34)', () => {
    let t: TestApp;
    let locker: Client;
    beforeAll(async () => {
      t = await startTestApp({
        databaseUrl: db.url,
        endpoints: [...endpoints, { ...endpoints[0], id: 'stripe-bravo', tenantId: 'bravo' }],
        env: {
          INGEST_FLUSHERS: '1',
          INGEST_BATCH_MAX: '1',
          INGEST_QUEUE_MAX: '8',
          INGEST_QUEUE_PER_ENDPOINT_MAX: '2',
          INGEST_QUEUE_WAIT_MS: '5000',
        },
      });
      locker = new Client({ connectionString: db.url });
      await locker.connect();
    });
    afterAll(async () => {
      await locker?.end();
      await t?.close();
    });

    it("one endpoint past its share of the accept queue: 503 intake_endpoint_busy for it, from any address; another endpoint's event is still queued and accepted", async () => {
      // Two addresses, one endpoint: the endpoint's share fills, not either client's.
      const committed = await shareFilled(t, db, locker, 'intake_endpoint_busy', {
        fill: () => [
          postFrom(t, '127.0.0.4', signStripe(stripeEvent({ id: 'evt_ea1' }), SECRET)),
          postFrom(t, '127.0.0.5', signStripe(stripeEvent({ id: 'evt_ea2' }), SECRET)),
        ],
        over: () => postFrom(t, '127.0.0.6', signStripe(stripeEvent({ id: 'evt_ea3' }), SECRET)),
        other: () => postFrom(t, '127.0.0.6', signStripe(stripeEvent({ id: 'evt_eb1' }), SECRET), 'stripe-bravo'),
      });
      expect(committed).toEqual(['evt_ea1', 'evt_ea2', 'evt_eb1']);
    });

    it("one address flooding one endpoint: 503 for that endpoint; the same address's event to another endpoint is still queued and accepted", async () => {
      // A provider sends every endpoint's events from the same few addresses.
      await db.query('DELETE FROM webhook_inbox');
      const committed = await shareFilled(t, db, locker, 'intake_endpoint_busy', {
        fill: () => ['evt_fa1', 'evt_fa2'].map((id) => postFrom(t, '127.0.0.7', signStripe(stripeEvent({ id }), SECRET))),
        over: () => postFrom(t, '127.0.0.7', signStripe(stripeEvent({ id: 'evt_fa3' }), SECRET)),
        other: () => postFrom(t, '127.0.0.7', signStripe(stripeEvent({ id: 'evt_fb1' }), SECRET), 'stripe-bravo'),
      });
      expect(committed).toEqual(['evt_fa1', 'evt_fa2', 'evt_fb1']);
    });
  });

  describe('the accept queue', () => {
    let t: TestApp;
    let locker: Client;
    beforeAll(async () => {
      t = await startTestApp({
        databaseUrl: db.url,
        endpoints,
        env: {
          INGEST_FLUSHERS: '1',
          INGEST_BATCH_MAX: '1',
          INGEST_QUEUE_MAX: '2',
          INGEST_QUEUE_PER_CLIENT_MAX: '100',
          INGEST_QUEUE_PER_ENDPOINT_MAX: '100',
          INGEST_QUEUE_WAIT_MS: '1500',
        },
      });
      locker = new Client({ connectionString: db.url });
      await locker.connect();
    });
    afterAll(async () => {
      await locker?.end();
      await t?.close();
    });

    /** Holds a lock every accept statement waits for: commits stall, as on a slow database. */
    async function stallCommits(): Promise<() => Promise<void>> {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE webhook_inbox IN EXCLUSIVE MODE');
      return async () => void (await locker.query('ROLLBACK'));
    }

    const rows = () => db.query<{ event_id: string }>('SELECT event_id FROM webhook_inbox ORDER BY event_id');

    it('is bounded: a request past the queue is 503 at once, and a waiter past its deadline is 503, never 200 without a commit', async () => {
      const release = await stallCommits();
      const signed = ['evt_q1', 'evt_q2', 'evt_q3', 'evt_q4'].map((id) => signStripe(stripeEvent({ id }), SECRET));
      try {
        // evt_q1 is in the (stalled) flush, evt_q2 and evt_q3 fill the queue.
        const first = [post(t, signed[0]), post(t, signed[1]), post(t, signed[2])].map((p) => p.then((r) => r));
        await waitFor('the queue to fill', async () => (await gauge(t, 'webhook_intake_queued')) >= 2);
        const over = await post(t, signed[3]);
        expect(over.status).toBe(503);
        expect(over.body.reason).toBe('intake_busy');
        expect(over.headers['retry-after']).toBeDefined();
        // The others wait past INGEST_QUEUE_WAIT_MS while the commit stalls: 503, never 200.
        for (const res of await Promise.all(first)) {
          expect(res.status).toBe(503);
          expect(res.headers['retry-after']).toBeDefined();
        }
      } finally {
        await release();
      }
      // Committed or not, never half: the provider's retries find each event exactly once.
      for (const s of signed) {
        const retry = await post(t, s);
        expect(retry.status).toBe(200);
      }
      expect((await rows()).map((r) => r.event_id)).toEqual(['evt_q1', 'evt_q2', 'evt_q3', 'evt_q4']);
    });

    it('a client that disconnects while its commit waits changes nothing about what is committed', async () => {
      const release = await stallCommits();
      const signed = signStripe(stripeEvent({ id: 'evt_gone' }), SECRET);
      const raw = await open(t.url);
      try {
        raw.socket.write(head(signed) + signed.body);
        await waitFor('the request to reach the accept statement', async () => (await waitingAccepts(db)) > 0);
        raw.socket.destroy();
      } finally {
        await release();
      }
      await waitFor('the event to be committed', async () => (await rows()).length === 1);
      expect(await rows()).toEqual([{ event_id: 'evt_gone' }]);
    });
  });
});

/** A gauge of the app's /metrics (0 when absent). */
/**
 * With the inbox table locked (`locker`), so accepts stay in flight: the two accepts of `fill`
 * take a share (one committing, one queued), `over` is refused 503 `reason` at once, and `other`
 * is still queued; once released, the three are accepted. Resolves with the event ids committed.
 */
async function shareFilled(
  t: TestApp,
  db: TestDatabase,
  locker: Client,
  reason: string,
  sends: { fill: () => Promise<Answer>[]; over: () => Promise<Answer>; other: () => Promise<Answer> },
): Promise<string[]> {
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE webhook_inbox IN EXCLUSIVE MODE');
  let released = false;
  const release = async () => {
    if (!released) await locker.query('ROLLBACK');
    released = true;
  };
  try {
    const fill = sends.fill();
    await waitFor('the share to fill', async () => (await gauge(t, 'webhook_intake_queued')) >= 1);
    expect(await sends.over()).toEqual({ status: 503, reason });
    const other = sends.other();
    await waitFor('the other to be queued', async () => (await gauge(t, 'webhook_intake_queued')) >= 2);
    await release();
    expect(await Promise.all([...fill, other])).toEqual([200, 200, 200].map((status) => ({ status, reason: undefined })));
  } finally {
    await release();
  }
  return (await db.query<{ event_id: string }>('SELECT event_id FROM webhook_inbox ORDER BY event_id')).map((r) => r.event_id);
}

async function gauge(t: TestApp, name: string): Promise<number> {
  const text = (await request(t.url).get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** Accept statements blocked on a lock. */
async function waitingAccepts(db: TestDatabase): Promise<number> {
  const [{ n }] = await db.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO webhook_inbox%'`,
  );
  return n;
}
