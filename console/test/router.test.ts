import { describe, expect, it } from 'vitest';
import { href, parseRoute } from '../src/router';

describe('hash routes', () => {
  it('reads every page and its query', () => {
    expect(parseRoute('')).toEqual({ page: 'overview' });
    expect(parseRoute('#/')).toEqual({ page: 'overview' });
    expect(parseRoute('#/inbox?status=quarantined&cursor=abc')).toEqual({ page: 'inbox', query: { status: 'quarantined', cursor: 'abc' } });
    expect(parseRoute('#/inbox/42')).toEqual({ page: 'event', id: '42' });
    expect(parseRoute('#/destinations')).toEqual({ page: 'destinations' });
    expect(parseRoute('#/destinations/erp%20eu')).toEqual({ page: 'destination', name: 'erp eu' });
    expect(href({ page: 'destination', name: 'erp eu' })).toBe('#/destinations/erp%20eu');
    expect(parseRoute('#/reconciliation')).toEqual({ page: 'reconciliation' });
    expect(parseRoute('#/erasure')).toEqual({ page: 'erasure' });
    expect(parseRoute('#/outbox?status=dead')).toEqual({ page: 'outbox', query: { status: 'dead' } });
    expect(parseRoute('#/orders?tenant=acme&id=o-1')).toEqual({ page: 'orders', query: { tenant: 'acme', id: 'o-1' } });
    expect(parseRoute('#/audit')).toEqual({ page: 'audit', query: {} });
    expect(parseRoute('#/rejections?endpoint=stripe-acme')).toEqual({ page: 'rejections', query: { endpoint: 'stripe-acme' } });
  });

  it('an id that is not a number, or an unknown page, is not found (never passed to the API as is)', () => {
    expect(parseRoute('#/inbox/1;drop')).toEqual({ page: 'not_found', path: '/inbox/1;drop' });
    expect(parseRoute('#/nope')).toEqual({ page: 'not_found', path: '/nope' });
  });

  it('writes what it reads, leaving empty filters out', () => {
    const route = { page: 'inbox' as const, query: { status: 'done', tenant: '', endpoint: 'stripe acme' } };
    expect(href(route)).toBe('#/inbox?status=done&endpoint=stripe+acme');
    expect(parseRoute(href(route))).toEqual({ page: 'inbox', query: { status: 'done', endpoint: 'stripe acme' } });
    expect(href({ page: 'event', id: '7' })).toBe('#/inbox/7');
  });
});
