import { CustomerMentions } from './customer-mentions';

const event = (orderId: string, email: string) => ({
  id: 'evt_1',
  data: { object: { metadata: { order_id: orderId }, receipt_email: email, charges: [{ billing_details: { email } }] } },
});

describe('CustomerMentions', () => {
  const mentions = new CustomerMentions([' An@Example.com '], new Map([['acme', new Set(['o-11'])]]));

  it('matches whole values after trimming and lower-casing, never a substring', () => {
    expect(mentions.holdsAddress(event('o-11', 'AN@example.COM'))).toBe(true);
    expect(mentions.holdsAddress(event('o-10', 'jan@example.com'))).toBe(false);
    expect(mentions.holdsAddress(event('o-10', 'an@example.com.evil'))).toBe(false);
    expect(mentions.holdsAddress({ note: 'write to an@example.com' })).toBe(false);
    expect(mentions.holdsAddress({ 'an@example.com': 1 })).toBe(true);
    expect(mentions.holdsAddress('an@example.com')).toBe(true);
  });

  it('names an order by its tenant and metadata.order_id only', () => {
    expect(mentions.namesOrder('acme', event('o-11', 'x'))).toBe(true);
    expect(mentions.namesOrder('globex', event('o-11', 'x'))).toBe(false);
    expect(mentions.namesOrder('acme', event('o-110', 'x'))).toBe(false);
    expect(mentions.namesOrder('acme', { data: null })).toBe(false);
  });

  it('redacts every matching value and key and leaves the rest usable', () => {
    const payload = event('o-11', 'An@example.com');
    (payload as any).data.object.by_address = { 'an@example.com': 'x' };
    const { payload: redacted, replaced } = mentions.redact(payload);
    expect(replaced).toBe(3);
    expect(redacted).toEqual({
      id: 'evt_1',
      data: {
        object: {
          metadata: { order_id: 'o-11' },
          receipt_email: '',
          charges: [{ billing_details: { email: '' } }],
          by_address: { '': 'x' },
        },
      },
    });
    expect(mentions.redact(event('o-10', 'jan@example.com')).replaced).toBe(0);
  });

  it('throws on a payload past its depth bound instead of skipping it or overflowing the stack', () => {
    let deep: unknown = { email: 'an@example.com' };
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(() => mentions.holdsAddress(deep)).toThrow(RangeError);
    expect(() => new CustomerMentions(['an@example.com'], new Map(), 5).holdsAddress({ a: { b: { c: { d: {} } } } })).not.toThrow();
    expect(() => new CustomerMentions(['an@example.com'], new Map(), 3).holdsAddress({ a: { b: { c: { d: {} } } } })).toThrow(RangeError);
  });
});
