import pino from 'pino';
import { Writable } from 'node:stream';
import { pinoHttpOptions, serializeError } from './logging';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const options = pinoHttpOptions({ logLevel: 'info' }) as pino.LoggerOptions;
  return { logger: pino({ level: 'info', redact: options.redact }, stream), lines };
}

describe('log redaction', () => {
  it('censors signature and auth headers, bodies, payloads and secrets', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        req: { headers: { authorization: 'Bearer tok-1', 'stripe-signature': 't=1,v1=abc', 'x-shopify-hmac-sha256': 'hm' }, body: 'raw' },
        headers: { 'webhook-signature': 'v1,sig', cookie: 'c=1', 'svix-signature': 's', 'x-hub-signature-256': 'sha256=ff' },
        payload: { card: '4242' },
        event: { payload: { email: 'a@b.c' }, secret: 'whsec_1' },
        token: 'tok-2',
        eventId: 'evt_1',
      },
      'msg',
    );
    const text = lines.join('');
    for (const leaked of ['tok-1', 'v1=abc', 'hm"', 'v1,sig', 'c=1', '"s"', 'sha256=ff', '4242', 'a@b.c', 'whsec_1', 'tok-2', '"raw"']) {
      expect(text).not.toContain(leaked);
    }
    expect(text).toContain('evt_1');
  });
});

describe('serializeError', () => {
  it('keeps the message whether the caller passes an Error or its short string', () => {
    expect(serializeError('TransientError: order_not_found')).toBe('TransientError: order_not_found');
    expect(serializeError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toEqual({
      type: 'Error',
      code: 'ECONNREFUSED',
      message: 'connect ECONNREFUSED',
    });
    expect(serializeError('x'.repeat(600))).toHaveLength(500);
  });
});
