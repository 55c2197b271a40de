import { EndpointConfig } from '../../config/app-config';
import { UnauthorizedError } from '../../common/errors';
import { hmacSha256, safeEqual } from './hmac';
import { keyMaterial, SecretForm } from './secret-form';
import {
  header,
  liveSecrets,
  parseJsonObject,
  requireIdentifier,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from './webhook-provider';

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
    const timestamp = h('timestamp');
    // The id is signed content: without it no signature can verify, so it is an authentication failure.
    if (id === undefined) throw new UnauthorizedError('missing_event_id', 'webhook-id header is missing');
    if (!timestamp || !/^\d{1,12}$/.test(timestamp)) {
      throw new UnauthorizedError('invalid_timestamp', 'webhook-timestamp is missing or not a number');
    }
    const secret = liveSecrets(endpoint, now).find((s) => {
      const expected = hmacSha256(standardSecretKey(s.value), id, '.', timestamp, '.', request.rawBody);
      return v1.some((given) => safeEqual(expected, given));
    });
    if (!secret) throw new UnauthorizedError('invalid_signature', 'no configured secret verifies the signature');
    if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > endpoint.toleranceSeconds) {
      throw new UnauthorizedError('timestamp_out_of_tolerance', 'webhook-timestamp is outside the tolerance');
    }

    const eventId = requireIdentifier(id, 'invalid_event_id');
    const body = parseJsonObject(request.rawBody);
    const eventType = requireIdentifier(body.type, 'invalid_event_type');
    return {
      eventId,
      eventType,
      namespace: `endpoint-${endpoint.id}`,
      verifiedWith: secret.label,
      source: {},
    };
  }
}
