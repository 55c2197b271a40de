import Stripe from 'stripe';
import { EndpointConfig } from '../../config/app-config';
import { accountOption, StripeApi, unavailableOf } from './stripe-api';
import { ProviderUnavailableError } from '../../provider-api/provider-api.errors';
import { ReconcileContext, Reconciler, ReconcilerFor, ReconcileWindow } from '../../reconciliation/reconciler';

/** Stripe's page size limit, and the most `types` one list call may filter on. */
const PAGE = 100;
const MAX_TYPES = 20;

/**
 * Stripe keeps 30 days of events: list them (`events.list`, newest first) in the
 * window, for the endpoint's accepted types, as its connected account when it
 * expects one, paging with `starting_after` to the end; every page goes through
 * the acceptance path before the next is asked for.
 */
@ReconcilerFor('stripe')
export class StripeReconciler implements Reconciler {
  constructor(private readonly api: StripeApi) {}

  refuse(endpoint: EndpointConfig): string | undefined {
    const types = endpoint.eventTypes?.size ?? 0;
    if (types > MAX_TYPES) return `Stripe filters a list on at most ${MAX_TYPES} eventTypes (this endpoint has ${types})`;
    return undefined;
  }

  async run(endpoint: EndpointConfig, window: ReconcileWindow, context: ReconcileContext): Promise<void> {
    const stripe = this.api.client(endpoint);
    const options = accountOption(endpoint.expect?.account);
    const params: Stripe.EventListParams = {
      created: { gte: Math.floor(window.from.getTime() / 1000), lt: Math.ceil(window.to.getTime() / 1000) },
      limit: PAGE,
      ...(endpoint.eventTypes && { types: [...endpoint.eventTypes] }),
      ...(endpoint.api?.reconcile?.onlyFailedDeliveries && { delivery_success: false }),
    };
    let after = window.position;
    for (;;) {
      const page = await context.call(() =>
        stripe.events.list({ ...params, ...(after && { starting_after: after }) }, options).catch((error: unknown) => {
          throw unavailableOf(error);
        }),
      );
      if (page.data.length === 0) {
        // An empty page that says there is more cannot be paged past: fail the run (the cursor
        // stays) rather than succeed over events not listed.
        if (page.has_more) throw new ProviderUnavailableError('unavailable');
        return;
      }
      const last: unknown = page.data[page.data.length - 1].id;
      // Paging must move on: without a new last id (a malformed answer) the next call would list
      // the same page again, for ever. The page is taken, then the run fails (the cursor stays).
      const moved = typeof last === 'string' && last !== '' && last !== after;
      if (moved) after = last;
      await context.accept(page.data, after ?? '');
      if (!page.has_more) return;
      if (!moved) throw new ProviderUnavailableError('malformed_answer');
    }
  }
}
