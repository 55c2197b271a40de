import { describe, expect, it } from 'vitest';
import { Api, ApiError, describeError, queryString } from '../src/api';

function fakeFetch(status: number, body: string, seen: { url?: string; init?: RequestInit }[] = []) {
  return async (url: string, init?: RequestInit) => {
    seen.push({ url, init });
    return new Response(body, { status, headers: { 'content-type': 'application/json' } });
  };
}

describe('admin API client', () => {
  it('sends the token as a Bearer header, never as a cookie, and leaves unset filters out', async () => {
    const seen: { url?: string; init?: RequestInit }[] = [];
    const api = new Api('tok-1', fakeFetch(200, '{"items":[],"nextCursor":null}', seen));
    await api.inbox({ status: 'quarantined', tenant: '', cursor: undefined, limit: 50 });
    expect(seen[0].url).toBe('/admin/inbox?status=quarantined&limit=50');
    expect((seen[0].init!.headers as Record<string, string>).authorization).toBe('Bearer tok-1');
    expect(seen[0].init!.credentials).toBe('omit');
  });

  it('posts a reason as JSON', async () => {
    const seen: { url?: string; init?: RequestInit }[] = [];
    await new Api('t', fakeFetch(200, '{}', seen)).replay('12', 'customer asked');
    expect(seen[0].url).toBe('/admin/inbox/12/replay');
    expect(seen[0].init!.method).toBe('POST');
    expect(JSON.parse(seen[0].init!.body as string)).toEqual({ reason: 'customer asked' });
  });

  it('asks for an effect preview with an empty body, and lists rejected requests with their filters', async () => {
    const seen: { url?: string; init?: RequestInit }[] = [];
    const api = new Api('t', fakeFetch(200, '{"items":[],"nextCursor":null}', seen));
    await api.preview('12');
    expect(seen[0].url).toBe('/admin/inbox/12/preview');
    expect(seen[0].init!.method).toBe('POST');
    expect(JSON.parse(seen[0].init!.body as string)).toEqual({});
    await api.rejections({ endpoint: 'stripe-acme', reason: '', limit: 50 });
    expect(seen[1].url).toBe('/admin/rejections?endpoint=stripe-acme&limit=50');
  });

  it("an error carries the API's reason and message", async () => {
    const api = new Api('t', fakeFetch(409, '{"status":"error","reason":"not_replayable","message":"the event is pending"}'));
    const error = await api.replay('1', 'x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(describeError(error)).toEqual({ reason: 'not_replayable', message: 'the event is pending' });
  });

  it('a body that is not JSON (a proxy page) still gives a reason; so does a network failure', async () => {
    const html = await new Api('t', fakeFetch(502, '<html>bad gateway</html>')).stats().catch((e: unknown) => e);
    expect(describeError(html).reason).toBe('http_502');
    const down = await new Api('t', async () => {
      throw new TypeError('Failed to fetch');
    })
      .stats()
      .catch((e: unknown) => e);
    expect(describeError(down)).toEqual({ reason: 'network_error', message: 'the service could not be reached' });
  });

  it('queryString keeps zero and false, drops empty and missing values', () => {
    expect(queryString({ a: 0, b: false, c: '', d: null, e: undefined })).toBe('?a=0&b=false');
    expect(queryString({})).toBe('');
  });
});
