import { jsonDepthExceeds, MAX_PAYLOAD_DEPTH, valueDepthExceeds } from './json-depth';

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);

describe('jsonDepthExceeds', () => {
  it.each([
    ['{}', 1],
    ['[]', 1],
    ['1', 0],
    ['"x"', 0],
    ['{"a":[{"b":{}}]}', 4],
    ['[[],[[]],{}]', 3],
  ])('%s nests %d deep', (json, depth) => {
    expect(jsonDepthExceeds(json, depth)).toBe(false);
    if (depth > 0) expect(jsonDepthExceeds(json, depth - 1)).toBe(true);
  });

  it('ignores braces and brackets inside strings, escaped quotes included', () => {
    const json = JSON.stringify({ a: '[[[{{{', b: 'say \\"[[[\\" and "{{{"', c: ['\\', '}]'] });
    expect(jsonDepthExceeds(json, 2)).toBe(false);
    expect(jsonDepthExceeds(json, 1)).toBe(true);
  });

  it('reads UTF-8 bytes the same as text', () => {
    const json = JSON.stringify({ name: 'Zoë 😀 [', items: [{ k: 'ü' }] });
    for (const max of [2, 3]) expect(jsonDepthExceeds(Buffer.from(json), max)).toBe(jsonDepthExceeds(json, max));
    expect(jsonDepthExceeds(Buffer.from(json), 3)).toBe(false);
  });

  it('takes 20,000 levels without recursion, at the default bound', () => {
    expect(jsonDepthExceeds(nested(20_000))).toBe(true);
    expect(jsonDepthExceeds(Buffer.from(nested(20_000, '{"a":', '}')))).toBe(true);
    expect(jsonDepthExceeds(nested(MAX_PAYLOAD_DEPTH))).toBe(false);
    expect(jsonDepthExceeds(nested(MAX_PAYLOAD_DEPTH + 1))).toBe(true);
  });

  it('passes a realistic provider payload', () => {
    const stripe = {
      id: 'evt_1',
      data: { object: { charges: { data: [{ billing_details: { address: { city: 'X' } } }] }, metadata: {} } },
    };
    expect(jsonDepthExceeds(JSON.stringify(stripe))).toBe(false);
  });
});

describe('valueDepthExceeds', () => {
  it('counts the levels of a parsed value like the text scan does', () => {
    for (const json of ['{}', '1', '{"a":[{"b":{}}]}', '[[],[[]],{}]']) {
      for (const max of [0, 1, 2, 3, 4]) expect(valueDepthExceeds(JSON.parse(json), max)).toBe(jsonDepthExceeds(json, max));
    }
  });

  it('takes a value 20,000 levels deep', () => {
    expect(valueDepthExceeds(JSON.parse(nested(20_000)))).toBe(true);
    expect(valueDepthExceeds(JSON.parse(nested(MAX_PAYLOAD_DEPTH)))).toBe(false);
  });
});
