import { createHash } from 'node:crypto';
import { AdminToken } from '../config/app-config';
import { bearerToken } from '../common/bearer-token';
import { authenticateBearer, hasRole } from './admin-auth';

const digest = (t: string) => createHash('sha256').update(t).digest();
const tokens: AdminToken[] = [
  { name: 'ops', role: 'operator', sha256: digest('operator-token-0123456789') },
  { name: 'view', role: 'viewer', sha256: digest('viewer-token-0123456789') },
];

describe('authenticateBearer', () => {
  it('finds the principal of a known token', () => {
    expect(authenticateBearer('Bearer viewer-token-0123456789', tokens)).toEqual({
      ok: true,
      principal: { name: 'view', role: 'viewer' },
    });
    expect(authenticateBearer('bearer  operator-token-0123456789', tokens)).toMatchObject({ principal: { name: 'ops' } });
  });

  it('tells a missing token from a wrong one', () => {
    expect(authenticateBearer(undefined, tokens)).toEqual({ ok: false, reason: 'missing_token' });
    expect(authenticateBearer('Basic abc', tokens)).toEqual({ ok: false, reason: 'missing_token' });
    expect(authenticateBearer('Bearer ', tokens)).toEqual({ ok: false, reason: 'missing_token' });
    expect(authenticateBearer('Bearer operator-token-012345678', tokens)).toEqual({ ok: false, reason: 'invalid_token' });
  });

  it('parses only a single token', () => {
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken('Bearer abc')).toBe('abc');
  });

  it('ranks operator above viewer', () => {
    expect(hasRole({ name: 'o', role: 'operator' }, 'viewer')).toBe(true);
    expect(hasRole({ name: 'v', role: 'viewer' }, 'operator')).toBe(false);
  });
});
