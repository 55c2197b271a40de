import { EndpointConfig } from '../../config/app-config';
import { UnauthorizedError } from '../../common/errors';
import { hmacSha256, requireRecent, secondsHeader, signingSecret } from '../hmac-signature';
import { keyMaterial, SecretForm } from '../../ingestion/secret-form';
import {
  parseJsonObject,
  header,
  endpointNamespace,
  requireIdentifier,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';

/** A Standard Webhooks secret is base64, optionally prefixed `whsec_`. */
const STANDARD_SECRET: SecretForm = { encoding: 'base64', prefix: 'whsec_' };

/** The HMAC key of a secret; its form was checked at start, so anything else is a bug, never an empty key. */
export function standardSecretKey(secret: string): Buffer {
  const key = keyMaterial(secret, STANDARD_SECRET);
  if (!key) throw new Error('a Standard Webhooks secret that is not base64 reached verification');
  return key;
}

/**
 * Standard Webhooks (and Svix): HMAC-SHA256 of `<id>.<timestamp>.<body>`, sent as
 * a space-separated list of `v1,<base64>`. Written by hand (constant time) because
 * the `standardwebhooks` library fixes the tolerance at five minutes and reads the
 * wall clock; the test suite signs with that library to keep both in agreement.
 * The id and timestamp are signed, so they are trusted once verified.
 */
@WebhookProviderFor('standard')
export class StandardWebhooksProvider implements WebhookProvider {
  readonly expects = {};
  readonly reads: readonly string[] = ['type'];

  secretForm(): SecretForm {
    return STANDARD_SECRET;
  }

  verify(request: WebhookRequest, endpoint: EndpointConfig, now: Date): VerifiedEvent {
    const h = (name: string) => header(request.headers, `webhook-${name}`) ?? header(request.headers, `svix-${name}`);
    const signatures = h('signature');
    if (!signatures) throw new UnauthorizedError('missing_signature', 'webhook-signature header is missing');
    const v1 = signatures
      .split(' ')
      .filter((entry) => entry.startsWith('v1,'))
      .map((entry) => Buffer.from(entry.slice(3), 'base64'));
    if (v1.length === 0) throw new UnauthorizedError('unsupported_signature_version', 'no v1 signature');

    const id = h('id');
    // The id is signed content: without it no signature can verify, so it is an authentication failure.
    if (id === undefined) throw new UnauthorizedError('missing_event_id', 'webhook-id header is missing');
    const timestamp = secondsHeader(h('timestamp'), 'webhook-timestamp');
    const secret = signingSecret(endpoint, now, v1, (s) =>
      hmacSha256(standardSecretKey(s.value), id, '.', timestamp, '.', request.rawBody),
    );
    requireRecent(Number(timestamp) * 1000, endpoint, now, 'webhook-timestamp');

    const eventId = requireIdentifier(id, 'invalid_event_id');
    const body = parseJsonObject(request.rawBody);
    const eventType = requireIdentifier(body.type, 'invalid_event_type');
    return {
      eventId,
      eventType,
      namespace: endpointNamespace(endpoint),
      verifiedWith: secret.label,
      source: {},
    };
  }
}
