import Stripe from 'stripe';
import { EndpointConfig } from '../../config/app-config';
import { Clock } from '../../common/clock';
import { EventToConfirm, ProviderReading, ProviderStateReader, ReadSubject, StateReaderFor } from '../../provider-api/state-reader';
import { accountOption, isMissing, StripeApi, unavailableOf } from './stripe-api';

/**
 * Before `awaiting_payment -> paid` the PaymentIntent, before `paid -> refunded`
 * the Charge (a PaymentIntent has no refunded status: refunds live on the Charge).
 * Only the fields the decision needs are kept.
 */
@StateReaderFor('stripe')
export class StripeStateReader implements ProviderStateReader {
  constructor(
    private readonly api: StripeApi,
    private readonly clock: Clock,
  ) {}

  subject(event: EventToConfirm): ReadSubject | undefined {
    const object =
      event.eventType === 'payment_intent.succeeded' ? 'payment_intent' : event.eventType === 'charge.refunded' ? 'charge' : undefined;
    if (!object) return undefined;
    // A body that names no object still gets its read, which finds nothing (read): the body alone
    // never moves an order when the endpoint confirms (a refund's handler needs no charge id).
    const id = event.payload?.data?.object?.id;
    return { object, id: typeof id === 'string' ? id : '' };
  }

  async read(endpoint: EndpointConfig, event: EventToConfirm, subject: ReadSubject): Promise<ProviderReading> {
    const stripe = this.api.client(endpoint);
    const options = accountOption(event.payload?.account);
    const readAt = this.clock.now().toISOString();
    if (subject.id === '') return { ...subject, found: false, readAt };
    try {
      if (subject.object === 'payment_intent') {
        const pi = await stripe.paymentIntents.retrieve(subject.id, {}, options);
        return { ...subject, found: true, readAt, state: { status: pi.status, amount: pi.amount, currency: pi.currency } };
      }
      const charge: Stripe.Charge = await stripe.charges.retrieve(subject.id, {}, options);
      const pi = charge.payment_intent;
      return {
        ...subject,
        found: true,
        readAt,
        state: {
          status: charge.status,
          amount: charge.amount,
          currency: charge.currency,
          refunded: charge.refunded,
          amount_refunded: charge.amount_refunded,
          payment_intent: typeof pi === 'string' ? pi : (pi?.id ?? null),
        },
      };
    } catch (error) {
      if (isMissing(error)) return { ...subject, found: false, readAt };
      throw unavailableOf(error);
    }
  }
}
