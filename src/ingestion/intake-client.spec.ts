import { intakeClientOf } from './intake-client';

describe('intakeClientOf', () => {
  it('is the peer address with no trusted proxy, whatever X-Forwarded-For claims', () => {
    expect(intakeClientOf('203.0.113.7', undefined, 0)).toBe('203.0.113.7');
    expect(intakeClientOf('203.0.113.7', '198.51.100.1', 0)).toBe('203.0.113.7');
    expect(intakeClientOf('::ffff:203.0.113.7', undefined, 0)).toBe('203.0.113.7');
    expect(intakeClientOf(undefined, undefined, 0)).toBe('unknown');
  });

  it('keys IPv6 clients by their /64', () => {
    expect(intakeClientOf('2001:db8:aa:1::5', undefined, 0)).toBe('2001:db8:aa:1::/64');
    expect(intakeClientOf('2001:0db8:00aa:0001:ffff:1:2:3', undefined, 0)).toBe('2001:db8:aa:1::/64');
    expect(intakeClientOf('2001:db8::1', undefined, 0)).toBe('2001:db8:0:0::/64');
    expect(intakeClientOf('::1', undefined, 0)).toBe('0:0:0:0::/64');
    expect(intakeClientOf('fe80::1%eth0', undefined, 0)).toBe('fe80:0:0:0::/64');
  });

  it('behind trusted proxies, reads X-Forwarded-For from the right, never past the trusted hops', () => {
    // client -> proxy A (adds the client) -> proxy B (adds A) -> us (B is the peer)
    expect(intakeClientOf('10.0.0.2', '203.0.113.7', 1)).toBe('203.0.113.7');
    expect(intakeClientOf('10.0.0.2', 'forged, 203.0.113.7, 10.0.0.1', 2)).toBe('203.0.113.7');
    expect(intakeClientOf('10.0.0.2', ['forged', '203.0.113.7'], 1)).toBe('203.0.113.7');
    // Fewer hops than trusted: the leftmost entry, the best there is.
    expect(intakeClientOf('10.0.0.2', '203.0.113.7', 3)).toBe('203.0.113.7');
    // No header at all: the peer.
    expect(intakeClientOf('10.0.0.2', undefined, 1)).toBe('10.0.0.2');
  });
});
