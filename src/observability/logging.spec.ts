import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import pino from 'pino';
import { Writable } from 'node:stream';
import { AppConfig } from '../config/app-config';
import { loadTracingConfig } from '../config/tracing-env';
import { Tracing } from '../tracing/tracing';
import { pinoHttpOptions, redactLogFields, serializeError } from './logging';

const TRACING_OFF = loadTracingConfig({});

function capture(tracing = TRACING_OFF) {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const options = pinoHttpOptions({ logLevel: 'info', tracing }) as pino.LoggerOptions;
  return {
    logger: pino({ level: 'info', formatters: options.formatters, serializers: options.serializers, mixin: options.mixin }, stream),
    lines,
  };
}

describe('trace ids in log lines', () => {
  it('with tracing on, a line written inside a span carries its trace_id and span_id; one outside carries none', async () => {
    const config = { tracing: loadTracingConfig({ OTEL_TRACES_EXPORTER: 'console' }) } as AppConfig;
    const tracing = new Tracing(config, new InMemorySpanExporter());
    try {
      const { logger, lines } = capture(config.tracing);
      const span = tracing.startSpan('work');
      tracing.run(span, () => logger.info('inside'));
      span.end();
      logger.info({ eventId: 'evt_1' }, 'outside, with fields');
      logger.info('outside');
      const [inside, withFields, outside] = lines.map((l) => JSON.parse(l));
      expect(inside).toMatchObject({ trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });
      expect(withFields).toMatchObject({ eventId: 'evt_1' });
      expect(withFields.trace_id).toBeUndefined();
      // pino merges a line's fields into the mixin's object: one line's fields must not reach the next.
      expect(outside.eventId).toBeUndefined();
    } finally {
      await tracing.onApplicationShutdown();
    }
  });

  it('with tracing off, no mixin runs at all', () => {
    expect((pinoHttpOptions({ logLevel: 'info', tracing: TRACING_OFF }) as pino.LoggerOptions).mixin).toBeUndefined();
  });
});

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

  it("never changes the caller's object, and returns a line with nothing to censor as it came", () => {
    const nested = { headers: { authorization: 'Bearer tok-1', accept: 'json' }, id: 'x' };
    const fields = { event: nested, secret: 's', n: 1 };
    const clean = redactLogFields(fields);
    expect(clean).toEqual({ event: { headers: { authorization: '[redacted]', accept: 'json' }, id: 'x' }, secret: '[redacted]', n: 1 });
    expect(fields).toEqual({ event: { headers: { authorization: 'Bearer tok-1', accept: 'json' }, id: 'x' }, secret: 's', n: 1 });
    const plain = { endpointId: 'e', eventId: 'evt_1', inboxId: '7', operationKeys: ['erp:order-paid:t:o'] };
    expect(redactLogFields(plain)).toBe(plain);
  });

  it('leaves req, res and err to their serializers, which keep no headers or body', () => {
    const { logger, lines } = capture();
    const err = Object.assign(new Error('boom'), { body: 'secret body' });
    logger.info({ err }, 'failed');
    const line = JSON.parse(lines[0]);
    expect(line.err.message).toBe('boom');
    expect(lines[0]).not.toContain('secret body');
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
