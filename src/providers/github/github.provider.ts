import { EndpointConfig } from '../../config/app-config';
import { UnauthorizedError } from '../../common/errors';
import { hmacSha256, signingSecret } from '../hmac-signature';
import { SecretForm } from '../../ingestion/secret-form';
import {
  header,
  headerIdentity,
  endpointNamespace,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>` over the body; the delivery id is
 * stable across redeliveries. GitHub signs neither headers nor a timestamp: the
 * delivery id is as unsigned as the hook id, so the namespace is the hook the
 * delivery names (`X-GitHub-Hook-ID`, compared with `expect.hookId` when set), the
 * same whether or not the endpoint has `expect`: adding it to a live endpoint (GitHub
 * reconciliation needs it) leaves the identities as they were. Versions before
 * 2026-12-07 used the endpoint when `expect` was unset; those rows are found under
 * `formerNamespaces`, whether or not the endpoint has `expect` now.
 */
@WebhookProviderFor('github')
export class GithubProvider implements WebhookProvider {
  readonly expects = { hookId: 'string' } as const;
  readonly reads: readonly string[] = [];

  secretForm(): SecretForm {
    return { encoding: 'utf8' };
  }

  verify(request: WebhookRequest, endpoint: EndpointConfig, now: Date): VerifiedEvent {
    const signature = header(request.headers, 'x-hub-signature-256');
    if (!signature) throw new UnauthorizedError('missing_signature', 'X-Hub-Signature-256 header is missing');
    const match = /^sha256=([0-9a-fA-F]{64})$/.exec(signature.trim());
    if (!match) throw new UnauthorizedError('unsupported_signature_version', 'expected sha256=<hex>');
    const secret = signingSecret(endpoint, now, [Buffer.from(match[1], 'hex')], (s) => hmacSha256(s.value, request.rawBody));

    const { eventId, eventType } = headerIdentity(request, ['x-github-delivery'], 'x-github-event');
    const hookId = header(request.headers, 'x-github-hook-id');
    return {
      eventId,
      eventType,
      namespace: githubNamespace(endpoint, hookId),
      verifiedWith: secret.label,
      source: { hookId },
      occurredAt: uuidV1Time(eventId),
    };
  }

  /** Before 2026-12-07 an endpoint without `expect` stored its deliveries under itself (then perhaps got `expect`). */
  formerNamespaces(endpoint: EndpointConfig): string[] {
    return [endpointNamespace(endpoint)];
  }
}

/** The namespace of a delivery: the hook it names (a number), else the endpoint. */
export function githubNamespace(endpoint: EndpointConfig, hookId: string | undefined): string {
  const id = hookId?.trim();
  return id !== undefined && /^\d{1,20}$/.test(id) ? id : endpointNamespace(endpoint);
}

/** 100 ns intervals from the UUID epoch (1582-10-15) to the Unix epoch. */
const UUID_EPOCH_OFFSET = 122_192_928_000_000_000n;

/**
 * The time inside a version-1 UUID, as GitHub's delivery ids are (`72d3162e-cc78-11e3-...`):
 * it comes with the id and stays with it in every redelivery. Undefined for any other form,
 * whose events are then keyed by the id alone.
 */
export function uuidV1Time(id: string): Date | undefined {
  const match = /^([0-9a-f]{8})-([0-9a-f]{4})-1([0-9a-f]{3})-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.exec(id);
  if (!match) return undefined;
  const ticks = (BigInt(`0x${match[3]}`) << 48n) | (BigInt(`0x${match[2]}`) << 32n) | BigInt(`0x${match[1]}`);
  return new Date(Number((ticks - UUID_EPOCH_OFFSET) / 10_000n));
}
