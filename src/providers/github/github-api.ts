import { Inject, Injectable } from '@nestjs/common';
import { Octokit } from '@octokit/rest';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../../config/app-config';
import { ProviderUnavailableError, retryAfterMs } from '../../provider-api/provider-api.errors';
import { ProviderAnswerError } from '../../provider-api/provider-api.errors';

/** `@octokit/rest` clients by endpoint (v20: the last CommonJS major); no retries of its own. */
@Injectable()
export class GithubApi {
  private readonly clients = new Map<string, Octokit>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  client(endpoint: EndpointConfig): Octokit {
    const api = endpoint.api;
    if (!api) throw new Error(`endpoint ${endpoint.id} has no api key`);
    let client = this.clients.get(endpoint.id);
    if (!client) {
      client = new Octokit({
        auth: api.key.reveal(),
        baseUrl: api.baseUrl ? api.baseUrl.href.replace(/\/+$/, '') : undefined,
        userAgent: 'webhook-inbox',
        // Octokit logs a failed request's message; ours is enough (and never holds the token).
        log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
      });
      this.clients.set(endpoint.id, client);
    }
    return client;
  }

  /** A per-call deadline (PROVIDER_API_TIMEOUT_MS), as Octokit's `request.signal`. */
  deadline(): { signal: AbortSignal } {
    return { signal: AbortSignal.timeout(this.config.providerApi.timeoutMs) };
  }
}

/** When GitHub's rate limit (x-ratelimit-remaining / -reset) allows the next call, in ms from now; 0 when it does now. */
export function rateLimitWaitMs(headers: Record<string, unknown> | undefined, now = Date.now()): number {
  if (!headers || String(headers['x-ratelimit-remaining']) !== '0') return 0;
  const reset = Number(headers['x-ratelimit-reset']);
  return Number.isFinite(reset) ? Math.max(0, reset * 1000 - now) : 60_000;
}

/** An Octokit failure as ProviderUnavailableError (no answer) or ProviderAnswerError (a 4xx answer); the token never appears. */
export function githubErrorOf(error: unknown): Error {
  const e = error as { status?: number; response?: { headers?: Record<string, unknown> }; name?: string };
  const status = typeof e?.status === 'number' ? e.status : undefined;
  const headers = e?.response?.headers;
  if (status === undefined || status >= 500)
    return new ProviderUnavailableError(e?.name === 'AbortError' || e?.name === 'TimeoutError' ? 'timeout' : 'unavailable', status);
  const limited = rateLimitWaitMs(headers);
  if (status === 429 || (status === 403 && (limited > 0 || headers?.['retry-after'] !== undefined))) {
    return new ProviderUnavailableError('rate_limited', status, retryAfterMs(headers?.['retry-after'] as string | undefined) ?? limited);
  }
  if (status === 401 || status === 403) return new ProviderUnavailableError('credentials_refused', status);
  return new ProviderAnswerError(status, undefined);
}
