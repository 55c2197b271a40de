import { Client } from 'pg';
import { RECORD_OUTCOMES } from '../../src/outbox/outbox.queries';
import { planNodes, TestDatabase, useTestDatabase } from '../support/test-database';

const DELIVERED = 64;
const WRITTEN_SINCE = 5_000;

/**
 * Recording a round's outcomes releases the entries held behind each delivered one through
 * their aggregate (a few rows), not through the due index: during a backlog every entry
 * written since the round began is due after the round's clock, and statistics taken
 * before the backlog say there are none of them (issue 34, the relay's largest cost).
 */
describe('recording outcomes: the release of held entries reads their aggregate only', () => {
  let db: TestDatabase;
  useTestDatabase((d) => (db = d));

  it('reads a handful of rows per delivered entry, however many entries were written since the round began', async () => {
    await db.query(`ALTER TABLE outbox SET (autovacuum_enabled = false)`);
    await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, aggregate, aggregate_seq, status, attempts, locked_by)
       SELECT 'erp:acme:d' || g, 'erp', 'order.paid', 'acme', '{}', 'order:d' || g, 1, 'delivering', 1, 'lease-1'
         FROM generate_series(1, ${DELIVERED}) g`,
    );
    await db.query(
      `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, aggregate, aggregate_seq, status)
       SELECT 'erp:acme:w' || g, 'erp', 'order.paid', 'acme', '{}', 'order:w' || g, 1, 'pending' FROM generate_series(1, ${WRITTEN_SINCE}) g`,
    );
    // The statistics of before the backlog: nothing due in the future. Then the entries written since.
    await db.query('ANALYZE outbox');
    await db.query(`UPDATE outbox SET next_attempt_at = now() + interval '1 minute' WHERE operation_key LIKE 'erp:acme:w%'`);

    const ids = (await db.query(`SELECT id FROM outbox WHERE locked_by = 'lease-1' ORDER BY id`)).map((r: { id: string }) => r.id);
    const all = (value: string) => `array_fill(${value}, ARRAY[${ids.length}])`;
    const literal = [
      '',
      `ARRAY[${ids.join(',')}]::bigint[]`,
      all('1'),
      all(`'delivered'::text`),
      all('NULL::timestamptz'),
      all('NULL::text'),
      all('200'),
      all('false'),
      `'lease-1'`,
      'now()',
      all('false'),
      all('5'),
      all('NULL::text'),
      all('NULL::int'),
    ];
    const later = (await planNodes(db, RECORD_OUTCOMES, literal)).filter(
      (node) => node['Relation Name'] === 'outbox' && node.Alias === 'n',
    );
    expect(later).toHaveLength(1);
    expect(later[0]['Index Name']).toBe('outbox_aggregate');
    const read = later[0]['Actual Loops'] * (later[0]['Actual Rows'] + (later[0]['Rows Removed by Filter'] ?? 0));
    expect(read).toBeLessThanOrEqual(DELIVERED);
  });

  it('settles on one plan per connection for batches of one, and that plan probes the keys', async () => {
    // With the arrays' lengths in view, a batch of one always looked cheaper planned anew: at
    // 300 events/s the relay planned this statement on every call, about 0.5 ms each.
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query(
        `INSERT INTO outbox (operation_key, destination, operation_type, tenant_id, payload, aggregate, aggregate_seq, status, attempts, locked_by)
         SELECT 'erp:acme:one' || g, 'erp', 'order.paid', 'acme', '{}', 'order:one' || g, 1, 'delivering', 1, 'lease-1'
           FROM generate_series(1, 12) g RETURNING id`,
      );
      const ids = rows.map((r: { id: string }) => r.id);
      for (const id of ids) {
        const values = [[id], [1], ['delivered'], [null], [null], [200], [false], 'lease-1', new Date(), [false], [5], [null], [null]];
        await client.query({ name: 'outbox_record_outcomes', text: RECORD_OUTCOMES, values });
      }
      const [prepared] = (
        await client.query(`SELECT generic_plans::int, custom_plans::int FROM pg_prepared_statements WHERE name = 'outbox_record_outcomes'`)
      ).rows;
      expect(prepared.custom_plans).toBeLessThanOrEqual(5);
      expect(prepared.generic_plans).toBeGreaterThanOrEqual(ids.length - 5);
      const plan = (
        await client.query(
          `EXPLAIN EXECUTE outbox_record_outcomes(ARRAY[${ids[0]}], ARRAY[1], ARRAY['delivered'], ARRAY[NULL::timestamptz], ARRAY[NULL::text],
             ARRAY[200], ARRAY[false], 'lease-1', now(), ARRAY[false], ARRAY[5], ARRAY[NULL::text], ARRAY[NULL::int])`,
        )
      ).rows
        .map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN'])
        .join('\n');
      expect(plan).not.toMatch(/Seq Scan on outbox/);
      expect(plan).toMatch(/Index Scan using outbox_pkey on outbox o/);
      expect(plan).toMatch(/using outbox_aggregate on outbox n/);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end();
    }
  });
});
