import { EndpointConfig } from '../../config/app-config';
import { BadRequestError, UnauthorizedError } from '../../common/errors';
import { hmacSha256, requireRecent, secondsHeader, signingSecret } from '../hmac-signature';
import { SecretForm } from '../../ingestion/secret-form';
import {
  parseJsonObject,
  HandshakeReply,
  header,
  endpointNamespace,
  requireIdentifier,
  unixSecondsTime,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';

/**
 * Slack's Events API: `X-Slack-Signature: v0=<hex>`, an HMAC-SHA256 of
 * `v0:<X-Slack-Request-Timestamp>:<body>` with the app's signing secret. The
 * id and type are in the signed body (`event_id`, `event.type`). Two bodies
 * are not events: `url_verification` is answered with its `challenge` once
 * the signature verified, and `app_rate_limited` (Slack dropping our events
 * for a minute) is stored as an event of that type, one per app and minute.
 */
@WebhookProviderFor('slack')
export class SlackProvider implements WebhookProvider {
  readonly expects = { apiAppId: 'string', teamId: 'string' } as const;
  readonly reads: readonly string[] = ['type', 'event_id', 'event.type', 'api_app_id', 'team_id'];

  secretForm(): SecretForm {
    return { encoding: 'utf8' };
  }

  verify(request: WebhookRequest, endpoint: EndpointConfig, now: Date): VerifiedEvent | HandshakeReply {
    const signature = header(request.headers, 'x-slack-signature');
    if (!signature) throw new UnauthorizedError('missing_signature', 'X-Slack-Signature header is missing');
    const match = /^v0=([0-9a-fA-F]{64})$/.exec(signature.trim());
    if (!match) throw new UnauthorizedError('unsupported_signature_version', 'expected v0=<hex>');
    const timestamp = secondsHeader(header(request.headers, 'x-slack-request-timestamp'), 'X-Slack-Request-Timestamp');
    const given = [Buffer.from(match[1], 'hex')];
    const secret = signingSecret(endpoint, now, given, (s) => hmacSha256(s.value, 'v0:', timestamp, ':', request.rawBody));
    requireRecent(Number(timestamp) * 1000, endpoint, now, 'X-Slack-Request-Timestamp');

    const body = parseJsonObject(request.rawBody);
    if (body.type === 'url_verification') {
      return { handshake: { challenge: requireIdentifier(body.challenge, 'invalid_challenge') }, verifiedWith: secret.label };
    }
    const source = { apiAppId: stringOrUndefined(body.api_app_id), teamId: stringOrUndefined(body.team_id) };
    const namespace = endpointNamespace(endpoint);
    if (body.type === 'app_rate_limited') {
      // No event_id: the minute it is about identifies it, so a retry of the notice is a duplicate.
      const minute = body.minute_rate_limited;
      if (!Number.isSafeInteger(minute)) throw new BadRequestError('missing_event_id', 'app_rate_limited without minute_rate_limited');
      return {
        eventId: `app_rate_limited:${String(minute)}`,
        eventType: 'app_rate_limited',
        namespace,
        verifiedWith: secret.label,
        source,
      };
    }
    if (body.event_id === undefined) throw new BadRequestError('missing_event_id', 'event_id is missing');
    const event = body.event as Record<string, unknown> | undefined;
    return {
      eventId: requireIdentifier(body.event_id, 'invalid_event_id'),
      eventType: requireIdentifier(typeof event === 'object' && event !== null ? event.type : undefined, 'invalid_event_type'),
      namespace,
      verifiedWith: secret.label,
      source,
      occurredAt: unixSecondsTime(body.event_time),
    };
  }
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
