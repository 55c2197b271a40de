import { sleep } from './http';

type Query = <T>(sql: string) => Promise<T[]>;

/** Waits until nothing is pending or in flight in the inbox and the outbox (twice in a row). */
export async function quiesce(pg: { query: Query }, timeoutMs: number): Promise<{ ok: boolean; ms: number; open: string }> {
  const started = Date.now();
  let calm = 0;
  let open = '';
  while (Date.now() - started < timeoutMs) {
    const [row] = await pg.query<{ inbox: string; outbox: string }>(
      `SELECT (SELECT count(*) FROM webhook_inbox WHERE status IN ('pending','processing')) AS inbox,
              (SELECT count(*) FROM outbox WHERE status IN ('pending','delivering')) AS outbox`,
    );
    open = `inbox open ${row.inbox}, outbox open ${row.outbox}`;
    calm = row.inbox === '0' && row.outbox === '0' ? calm + 1 : 0;
    if (calm >= 2) return { ok: true, ms: Date.now() - started, open };
    await sleep(500);
  }
  return { ok: false, ms: Date.now() - started, open };
}
