import { classifyResponse } from './http-client';

describe('classifyResponse', () => {
  const now = new Date('2026-12-01T00:00:00Z');
  it.each([
    [200, 'delivered'],
    [201, 'delivered'],
    [409, 'delivered'],
    [400, 'dead'],
    [422, 'dead'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [503, 'retry'],
    [301, 'retry'],
  ])('HTTP %i -> %s', (status, kind) => {
    expect(classifyResponse({ status, headers: {} }, now).kind).toBe(kind);
  });

  it('a 408 is known not applied, so it resends without asking first', () => {
    expect(classifyResponse({ status: 408, headers: {} }, now)).toMatchObject({ kind: 'retry', outcomeUnknown: false });
  });
});
