import type { TimelineEntry } from './api';
import { duration } from './format';

/** One line of an event's story, in words an operator reads at a glance. */
export function describeEntry(entry: TimelineEntry): { title: string; facts: string[]; tone: 'ok' | 'warn' | 'bad' | 'info' } {
  const d = entry.detail;
  const facts = (pairs: [string, unknown][]) =>
    pairs.filter(([, v]) => v !== null && v !== undefined && v !== '').map(([k, v]) => `${k}: ${v}`);
  switch (entry.kind) {
    case 'received':
      return {
        title: `Received on ${d.endpointId}, verified with secret "${d.verifiedWith}"`,
        facts: facts([
          ['provider', d.provider],
          ['scope', d.sourceScope],
        ]),
        tone: 'info',
      };
    case 'redelivered':
      return {
        title: `Delivered ${d.deliveries} times in all (last copy at this time)`,
        facts: facts([['digest conflicts', d.digestConflicts || null]]),
        tone: Number(d.digestConflicts) > 0 ? 'warn' : 'info',
      };
    case 'attempt': {
      const tone = d.outcome === 'done' || d.outcome === 'ignored' ? 'ok' : d.outcome === 'quarantined' ? 'bad' : 'warn';
      return {
        title: `Processing attempt ${d.attempt}: ${d.outcome}`,
        facts: facts([
          ['instance', d.instance],
          ['reason', d.reason],
          ['error', d.error],
        ]),
        tone,
      };
    }
    case 'order_transition':
      return { title: `Order ${d.tenantId}/${d.orderId}: ${d.from} → ${d.to}`, facts: [], tone: 'ok' };
    case 'operation_created':
      return {
        title: `Operation created: ${d.operationKey}`,
        facts: facts([
          ['destination', d.destination],
          ['type', d.operationType],
        ]),
        tone: 'info',
      };
    case 'delivery_attempt': {
      const tone = d.outcome === 'delivered' ? 'ok' : d.outcome === 'retry' ? 'warn' : 'bad';
      return {
        title: `Delivery attempt ${d.attempt} of ${d.operationKey}: ${d.outcome}`,
        facts: facts([
          ['HTTP', d.statusCode],
          ['took', typeof d.durationMs === 'number' ? duration(d.durationMs) : null],
          ['outcome query', d.outcomeQuery],
          ['Retry-After', typeof d.retryAfterMs === 'number' ? duration(d.retryAfterMs) : null],
          ['instance', d.instance],
          ['error', d.error],
        ]),
        tone,
      };
    }
    case 'operator_action':
      return {
        // No actor for a token limited to tenants when the action spanned others.
        title: `${d.actor ?? 'an operator'} (${d.role}): ${d.action}`,
        facts: facts([
          ['reason', d.reason],
          ['status', d.beforeStatus || d.afterStatus ? `${d.beforeStatus ?? '?'} → ${d.afterStatus ?? '?'}` : null],
        ]),
        tone: 'info',
      };
    default:
      return { title: String(entry.kind), facts: [], tone: 'info' };
  }
}
