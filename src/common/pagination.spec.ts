import { SqlWhere, toPage } from './pagination';

describe('SqlWhere', () => {
  it('numbers placeholders in order', () => {
    const w = new SqlWhere().add('status = ?', 'pending').add('received_at >= ?', 'x').before('received_at', { atUs: '5', id: '7' });
    expect(w.sql()).toBe(
      "WHERE status = $1 AND received_at >= $2 AND (received_at, id) < (timestamptz 'epoch' + $3::bigint * interval '1 microsecond', $4::bigint)",
    );
    expect(w.params).toEqual(['pending', 'x', '5', '7']);
    expect(w.param(10)).toBe('$5');
  });

  it('is empty without clauses', () => {
    expect(new SqlWhere().sql()).toBe('');
  });
});

describe('toPage', () => {
  const rows = [1, 2, 3].map((id) => ({ id: String(id), page_at_us: `${id}00` }));
  it('keys the next page on the last kept row', () => {
    expect(toPage(rows, 2, (r) => r.id)).toEqual({ items: ['1', '2'], next: { atUs: '200', id: '2' } });
    expect(toPage(rows, 3, (r) => r.id)).toEqual({ items: ['1', '2', '3'], next: undefined });
  });
});
