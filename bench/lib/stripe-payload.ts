/** ~1 KB JSON payload, like a Stripe payment_intent event. */
export function payload(id: string, order: string): string {
  return JSON.stringify({
    id,
    object: 'event',
    api_version: '2026-10-28',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    type: 'payment_intent.succeeded',
    data: {
      object: {
        id: `pi_${order}`,
        object: 'payment_intent',
        amount: 1000,
        amount_received: 1000,
        currency: 'eur',
        customer: 'cus_Q4nZ2oP0aXyz12',
        description: 'Order from the bench',
        metadata: { order_id: order },
        payment_method_types: ['card'],
        receipt_email: 'customer@example.com',
        shipping: { address: { city: 'Berlin', country: 'DE', line1: 'Alexanderplatz 1', postal_code: '10178' }, name: 'Ada' },
        status: 'succeeded',
        padding: 'x'.repeat(420),
      },
    },
  });
}
