import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load-config';
import { signRequest } from './sign-request';

const USAGE = `Usage: npm run cli -- <command> [options]

  send <endpointId> [eventType]   sign a test event with the endpoint's secret and POST it, like the provider would
      --order <id> --amount <minor units> --currency <eur> --payment <pi_...> --event-id <id>
  replay <inboxId> --reason <why>                    re-queue one inbox event (operator token)
  replay <inboxId> --dry-run                         what a replay would do (the effect preview), changing nothing
  replay --filter status=quarantined,provider=stripe [--dry-run] --reason <why>
  stats                                              backlog, oldest pending age, failures, latency
  time-keys --reason <why>                           after an upgrade, once no older instance runs: key identities by
                                                     the sender's stated time (docs/operations.md, "Identity keys")
  reconciliation                                     per endpoint: cursor, last success, recent runs
  reconcile [--endpoint <id>] [--from <ISO>] [--to <ISO>] [--dry-run] --reason <why>
                                                     request a reconciliation run (a maintenance instance runs it)
  erase --email <address> --reason <why> [--dry-run] erase one customer's personal data (operator token)
  erase --order <tenant>/<orderId> --reason <why> [--dry-run]

Common: --url <base URL> (default http://localhost:$PORT or 3000), --token <admin token> (default $ADMIN_TOKEN)`;

type Flags = Record<string, string | boolean | undefined>;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      order: { type: 'string' },
      amount: { type: 'string' },
      currency: { type: 'string' },
      payment: { type: 'string' },
      'event-id': { type: 'string' },
      reason: { type: 'string' },
      email: { type: 'string' },
      filter: { type: 'string' },
      'dry-run': { type: 'boolean' },
      endpoint: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...args] = positionals;
  const flags: Flags = values;
  const base = String(flags.url ?? `http://localhost:${process.env.PORT || 3000}`).replace(/\/+$/, '');
  const token = String(flags.token ?? process.env.ADMIN_TOKEN ?? '');

  switch (command) {
    case 'send':
      return send(base, args, flags);
    case 'replay':
      return admin(base, token, 'POST', ...replayRequest(args, flags));
    case 'stats':
      return admin(base, token, 'GET', '/admin/stats');
    case 'time-keys':
      return admin(base, token, 'POST', '/admin/identity-keys/time', { reason: flags.reason });
    case 'reconciliation':
      return admin(base, token, 'GET', '/admin/reconciliation');
    case 'reconcile':
      return admin(base, token, 'POST', '/admin/reconciliation/run', reconcileRequest(flags));
    case 'erase':
      return admin(base, token, 'POST', '/admin/erasure', erasureBody(flags));
    default:
      process.stdout.write(`${USAGE}\n`);
      // Help asked for: 0. No command or an unknown one: 2.
      return flags.help && !command ? 0 : 2;
  }
}

async function send(base: string, [endpointId, eventType]: string[], flags: Flags): Promise<number> {
  if (!endpointId) throw new Error('send needs an endpoint id');
  const endpoint = loadConfig(process.env).endpoints.get(endpointId);
  if (!endpoint) throw new Error(`no endpoint "${endpointId}" in the endpoints file`);
  const type = eventType ?? DEFAULT_TYPES[endpoint.provider] ?? 'ping';
  const eventId = String(flags['event-id'] ?? (endpoint.provider === 'stripe' ? `evt_${randomUUID().replace(/-/g, '')}` : randomUUID()));
  const body = JSON.stringify(
    endpoint.provider === 'stripe'
      ? stripeEvent(eventId, type, flags)
      : endpoint.provider === 'slack'
        ? slackEvent(eventId, type)
        : { type, data: {} },
  );
  const secret = endpoint.secrets.find((s) => !s.notAfter || s.notAfter > new Date()) ?? endpoint.secrets[0];
  const signed = signRequest(endpoint.provider, secret.value, body, { eventId, eventType: type });
  const res = await fetch(`${base}/webhooks/${encodeURIComponent(endpointId)}`, {
    method: 'POST',
    headers: signed.headers,
    body: signed.body,
  });
  process.stdout.write(`${res.status} ${await res.text()}\n`);
  return res.ok ? 0 : 1;
}

const DEFAULT_TYPES: Record<string, string> = { stripe: 'payment_intent.succeeded', slack: 'app_mention' };

/** An Events API callback as Slack sends it; the id and type are in the signed body. */
function slackEvent(eventId: string, type: string): object {
  const now = Math.floor(Date.now() / 1000);
  return {
    token: 'cli',
    team_id: 'T0CLI',
    api_app_id: 'A0CLI',
    event: { type, user: 'U0CLI', text: 'sent by npm run cli', ts: `${now}.000100`, event_ts: `${now}.000100` },
    type: 'event_callback',
    event_id: eventId,
    event_time: now,
  };
}

function stripeEvent(id: string, type: string, flags: Flags): object {
  const order = String(flags.order ?? 'o-1001');
  const amount = Number(flags.amount ?? 4999);
  if (!Number.isSafeInteger(amount) || amount < 0) throw new Error('--amount must be a whole number of minor units (e.g. 4999)');
  const currency = String(flags.currency ?? 'eur');
  const payment = String(flags.payment ?? `pi_${order.replace(/[^A-Za-z0-9]/g, '')}`);
  const object = type.startsWith('charge.')
    ? {
        id: `ch_${payment.slice(3)}`,
        object: 'charge',
        payment_intent: payment,
        amount,
        amount_refunded: amount,
        currency,
        refunded: true,
        metadata: { order_id: order },
      }
    : { id: payment, object: 'payment_intent', amount, amount_received: amount, currency, metadata: { order_id: order } };
  return { id, object: 'event', type, created: Math.floor(Date.now() / 1000), livemode: false, data: { object } };
}

function erasureBody(flags: Flags): object {
  const reason = flags.reason;
  if (typeof reason !== 'string' || !reason.trim()) throw new Error('erase needs --reason');
  const dryRun = flags['dry-run'] === true ? { dryRun: true } : {};
  if (typeof flags.email === 'string') return { email: flags.email, reason, ...dryRun };
  const order = typeof flags.order === 'string' ? /^([^/]+)\/(.+)$/.exec(flags.order) : null;
  if (!order) throw new Error('erase needs --email <address> or --order <tenant>/<orderId>');
  return { tenantId: order[1], orderId: order[2], reason, ...dryRun };
}

function replayRequest([id]: string[], flags: Flags): [string, object] {
  // One event's dry run is its effect preview: it changes nothing, so it needs no reason.
  if (id && flags['dry-run']) return [`/admin/inbox/${encodeURIComponent(id)}/preview`, {}];
  const reason = flags.reason;
  if (typeof reason !== 'string' || !reason.trim()) throw new Error('replay needs --reason');
  if (id) return [`/admin/inbox/${encodeURIComponent(id)}/replay`, { reason }];
  if (typeof flags.filter !== 'string') throw new Error('replay needs an inbox id or --filter');
  const filter = Object.fromEntries(
    flags.filter.split(',').map((pair) => {
      const [key, ...rest] = pair.split('=');
      return [key.trim(), rest.join('=').trim()];
    }),
  );
  return ['/admin/inbox/replay', { filter, dryRun: Boolean(flags['dry-run']), reason }];
}

function reconcileRequest(flags: Flags): object {
  const reason = flags.reason;
  if (typeof reason !== 'string' || !reason.trim()) throw new Error('reconcile needs --reason');
  return { endpoint: flags.endpoint, from: flags.from, to: flags.to, dryRun: Boolean(flags['dry-run']), reason };
}

async function admin(base: string, token: string, method: string, path: string, body?: object): Promise<number> {
  if (!token) throw new Error('an admin token is needed: --token or ADMIN_TOKEN');
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let shown = text;
  try {
    shown = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // not JSON: print as is
  }
  process.stdout.write(`${res.status}\n${shown}\n`);
  return res.ok ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  },
);
