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
});
