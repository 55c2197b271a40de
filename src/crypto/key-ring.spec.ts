import { randomBytes } from 'node:crypto';
import { KeyRing, SealBrokenError, UnknownKeyError } from './key-ring';

const k1 = { id: 'k1', key: randomBytes(32) };
const k2 = { id: 'k2', key: randomBytes(32) };

describe('KeyRing (AES-256-GCM)', () => {
  it('seals with the current key and opens with any key of the ring', () => {
    const old = new KeyRing([k1]).seal('{"a":1}', ['row-1']);
    expect(old.keyId).toBe('k1');
    const ring = new KeyRing([k2, k1]);
    expect(ring.open('k1', old.sealed, ['row-1']).toString()).toBe('{"a":1}');
    expect(ring.seal('x', ['row-1']).keyId).toBe('k2');
  });

  it('uses a fresh nonce per value: the same plaintext never seals alike', () => {
    const ring = new KeyRing([k1]);
    expect(ring.seal('same', ['c']).sealed.equals(ring.seal('same', ['c']).sealed)).toBe(false);
    // Across refills of the nonce pool (1,024 nonces each), every nonce is new.
    const nonces = new Set(Array.from({ length: 3000 }, () => ring.seal('x', ['c']).sealed.subarray(1, 13).toString('hex')));
    expect(nonces.size).toBe(3000);
  });

  it('binds the context field by field: ["a.b", "c"] is not ["a", "b.c"]', () => {
    const ring = new KeyRing([k1]);
    const { sealed } = ring.seal('x', ['a.b', 'c']);
    expect(() => ring.open('k1', sealed, ['a', 'b.c'])).toThrow(SealBrokenError);
    expect(ring.open('k1', sealed, ['a.b', 'c']).toString()).toBe('x');
  });

  it('refuses another context, another key id, any altered byte, a truncation', () => {
    const ring = new KeyRing([k1, { id: 'k1b', key: k1.key }]);
    const { sealed } = ring.seal('secret', ['row-1']);
    expect(() => ring.open('k1', sealed, ['row-2'])).toThrow(SealBrokenError);
    // Same key material under another id: the id is associated data too.
    expect(() => ring.open('k1b', sealed, ['row-1'])).toThrow(SealBrokenError);
    for (let i = 0; i < sealed.length; i++) {
      const altered = Buffer.from(sealed);
      altered[i] ^= 0x01;
      expect(() => ring.open('k1', altered, ['row-1'])).toThrow(SealBrokenError);
    }
    expect(() => ring.open('k1', sealed.subarray(0, 20), ['row-1'])).toThrow(SealBrokenError);
    expect(() => ring.open('k9', sealed, ['row-1'])).toThrow(UnknownKeyError);
  });

  it('an empty ring is "encryption off" and refuses to seal', () => {
    const ring = new KeyRing([]);
    expect(ring.enabled).toBe(false);
    expect(() => ring.seal('x', ['c'])).toThrow(/no payload key ring/);
  });
});
