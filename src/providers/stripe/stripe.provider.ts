import Stripe from 'stripe';
import { EndpointConfig } from '../../config/app-config';
import { API_VERIFIED_WITH } from '../../config/load-config';
import { BadRequestError, UnauthorizedError } from '../../common/errors';
import { SecretForm } from '../../ingestion/secret-form';
import {
  header,
  liveSecrets,
  requireIdentifier,
  unixSecondsTime,
  utf8Text,
  VerifiedEvent,
  WebhookProvider,
  WebhookProviderFor,
  WebhookRequest,
} from '../../ingestion/webhook-provider';

const { webhooks } = Stripe as unknown as { webhooks: Stripe.Webhooks };

// The SDK verifies the body after a lossy UTF-8 decode (invalid bytes become U+FFFD,
// a leading BOM is dropped): only bytes that decode exactly can be the signed bytes.
const BOM = 0xfeff;

/** The body as text when its bytes are exactly that text's UTF-8 (so signing either is the same), else undefined. */
function exactUtf8Text(body: Buffer): string | undefined {
  const text = utf8Text(body);
  return text?.charCodeAt(0) === BOM ? undefined : text;
}

/**
 * Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=...]`, verified by the official
 * SDK. The SDK only bounds the age of `t`; a timestamp too far in the future is
 * refused here as well.
 */
@WebhookProviderFor('stripe')
export class StripeProvider implements WebhookProvider {
  readonly namespaceSpansEndpoints = true;
  readonly expects = { account: 'string', livemode: 'boolean' } as const;
  readonly reads: readonly string[] = ['id', 'type', 'account', 'livemode'];

  secretForm(): SecretForm {
    // The SDK keys the HMAC with the whole value; "whsec_" is public, so only the rest counts.
    return { encoding: 'utf8', prefix: 'whsec_' };
  }

  verify(request: WebhookRequest, endpoint: EndpointConfig, now: Date): VerifiedEvent {
    const signature = header(request.headers, 'stripe-signature');
    if (!signature) throw new UnauthorizedError('missing_signature', 'Stripe-Signature header is missing');
    // Items as the SDK reads them: split on ',' then '='.
    const items = signature.split(',').map((item) => item.split('='));
    if (!items.some(([key]) => key.trim() === 'v1')) {
      throw new UnauthorizedError('unsupported_signature_version', 'no v1 signature in Stripe-Signature');
    }
    // `t` keyed exactly as the SDK keys it, and exactly one, all digits: then this
    // check and the SDK's signature agree on the timestamp.
    const stamps = items.filter(([key]) => key === 't');
    if (stamps.length !== 1 || !/^\d{1,12}$/.test(stamps[0][1] ?? '')) {
      throw new UnauthorizedError('invalid_timestamp', 'Stripe-Signature needs exactly one t=<unix seconds>');
    }
    if (Number(stamps[0][1]) - Math.floor(now.getTime() / 1000) > endpoint.toleranceSeconds) {
      throw new UnauthorizedError('timestamp_out_of_tolerance', 'signature timestamp is in the future');
    }

    // Decoded once here; the SDK gets the text, whose UTF-8 is exactly the bytes received.
    const text = exactUtf8Text(request.rawBody);
    if (text === undefined) {
      throw new UnauthorizedError('invalid_signature', 'the body is not the UTF-8 text a Stripe signature covers');
    }

    let stale = false;
    for (const secret of liveSecrets(endpoint, now)) {
      // The SDK's check of the signature alone: its constructEvent also refuses a verified thin
      // event with a plain Error, which would read as a signature that did not verify.
      try {
        webhooks.signature!.verifyHeader(
          text,
          signature,
          secret.value,
          endpoint.toleranceSeconds,
          undefined,
          now.getTime(), // milliseconds, despite the SDK's name
        );
      } catch (error) {
        // Anything else (the SDK throws a plain Error for a header like "v1,<hex>") did not verify either.
        if (error instanceof Stripe.errors.StripeSignatureVerificationError) stale ||= /tolerance/i.test(error.message);
        continue;
      }
      let event: unknown;
      try {
        event = JSON.parse(text);
      } catch {
        throw new BadRequestError('malformed_json', 'body is not valid JSON');
      }
      if ((event as { object?: unknown } | null)?.object === 'v2.core.event') {
        throw new BadRequestError('unsupported_event', 'a thin event (v2.core.event): send snapshot events to this endpoint');
      }
      return this.identify(event, secret.label);
    }
    throw stale
      ? new UnauthorizedError('timestamp_out_of_tolerance', 'signature timestamp is outside the tolerance')
      : new UnauthorizedError('invalid_signature', 'no configured secret verifies the signature');
  }

  fromApi(event: unknown): VerifiedEvent {
    return this.identify(event, API_VERIFIED_WITH);
  }

  private identify(event: unknown, verifiedWith: string): VerifiedEvent {
    if (typeof event !== 'object' || event === null || Array.isArray(event)) {
      throw new BadRequestError('malformed_json', 'body is not a JSON object');
    }
    const { id, type, account, livemode, created } = event as Record<string, unknown>;
    if (id === undefined) throw new BadRequestError('missing_event_id', 'the event has no id');
    const eventId = requireIdentifier(id, 'invalid_event_id');
    const eventType = requireIdentifier(type, 'invalid_event_type');
    if (account !== undefined && account !== null) requireIdentifier(account, 'invalid_account');
    const accountId = typeof account === 'string' ? account : 'platform';
    const live = livemode === true;
    return {
      eventId,
      eventType,
      namespace: `${accountId}:${live ? 'live' : 'test'}`,
      verifiedWith,
      source: { account: accountId, livemode: live },
      occurredAt: unixSecondsTime(created),
    };
  }
}
