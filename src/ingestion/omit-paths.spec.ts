import { omitPaths, pathsOverlap } from './omit-paths';

describe('omitPaths', () => {
  it('drops nested keys and keeps the rest', () => {
    const json = JSON.stringify({
      id: 'evt_1',
      data: { object: { amount: 5, shipping: { name: 'Ada' }, billing_details: { email: 'a@x' } } },
    });
    expect(JSON.parse(omitPaths(json, ['data.object.shipping', 'data.object.billing_details']))).toEqual({
      id: 'evt_1',
      data: { object: { amount: 5 } },
    });
  });

  it('applies the rest of a path to every element of an array on the way', () => {
    const json = JSON.stringify({ data: { charges: [{ id: 'ch_1', billing: { zip: '1' } }, { id: 'ch_2', billing: { zip: '2' } }, 7] } });
    expect(JSON.parse(omitPaths(json, ['data.charges.billing']))).toEqual({ data: { charges: [{ id: 'ch_1' }, { id: 'ch_2' }, 7] } });
  });

  it('returns the text untouched when no path is present (no re-serialisation)', () => {
    const json = '{ "id" : "evt_1",\n "n": 1.50 }';
    expect(omitPaths(json, ['data.object.shipping', 'n.x'])).toBe(json);
  });

  it('never walks the prototype', () => {
    expect(omitPaths('{"a":1}', ['__proto__.x', 'constructor'])).toBe('{"a":1}');
  });
});

describe('pathsOverlap', () => {
  it.each([
    ['data.object', 'data.object.amount', true],
    ['data.object.metadata.order_id', 'data.object.metadata', true],
    ['data.object.amount', 'data.object.amount', true],
    ['data.object.shipping', 'data.object.amount', false],
    ['data.obj', 'data.object', false],
  ])('%s against %s: %s', (omitted, read, expected) => {
    expect(pathsOverlap(omitted, read)).toBe(expected);
  });
});

describe('omitPaths on a body past the depth bound', () => {
  it('refuses it (payload_too_deep) instead of recursing into it', () => {
    const json = `{"data":{"object":${'['.repeat(600)}${']'.repeat(600)}}}`;
    expect(() => omitPaths(json, ['data.object.shipping'])).toThrow(expect.objectContaining({ reason: 'payload_too_deep', status: 400 }));
  });
});
