import { Injectable } from '@nestjs/common';
import { TenantScope } from '../common/tenant-scope';
import { AuditRecord, AuditService } from '../audit/audit.service';
import { InboxAdminService } from '../inbox/inbox-admin.service';
import { InboxEventView } from '../inbox/inbox.types';
import { OrdersService } from '../orders/orders.service';
import { OutboxAdminService } from '../outbox/outbox-admin.service';
import { OutboxEntryView } from '../outbox/outbox.types';

export type TimelineKind =
  'received' | 'redelivered' | 'attempt' | 'order_transition' | 'operation_created' | 'delivery_attempt' | 'operator_action';

export interface TimelineEntry {
  at: Date;
  kind: TimelineKind;
  detail: Record<string, string | number | boolean | null>;
}

export interface Timeline {
  /** The event as the admin API shows it to a viewer (no payload). */
  event: InboxEventView;
  entries: TimelineEntry[];
  /** The outbox entries the event created, as they stand now. */
  operations: OutboxEntryView[];
}

/** Where an entry goes among entries of the same instant: the story's causal order. */
const RANK: Record<TimelineKind, number> = {
  received: 0,
  redelivered: 1,
  attempt: 2,
  order_transition: 3,
  operation_created: 4,
  delivery_attempt: 5,
  operator_action: 6,
};

/** `<instance>:<claim number>` -> the instance (host:pid:random) that made the attempt. */
export function instanceOf(lease: string | null): string | null {
  return lease === null ? null : lease.replace(/:\d+$/, '');
}

/**
 * One inbox event's story, read across the modules that own its parts, each
 * through its public read methods: the inbox (receipts, attempts), orders
 * (transitions), the outbox (operations and their delivery attempts) and the
 * audit log (operator actions). Read-only; nothing here touches a table.
 */
@Injectable()
export class TimelineService {
  constructor(
    private readonly inbox: InboxAdminService,
    private readonly orders: OrdersService,
    private readonly outbox: OutboxAdminService,
    private readonly audit: AuditService,
  ) {}

  /** Undefined when there is no such event, or it is outside `tenants`. */
  async ofEvent(id: string, tenants: TenantScope): Promise<Timeline | undefined> {
    const event = await this.inbox.get(id, tenants);
    if (!event) return undefined;
    const [attempts, transitions, operations] = await Promise.all([
      this.inbox.attemptsOf(id),
      this.orders.transitionsOfEvent(id),
      this.outbox.entriesOfEvent(id),
    ]);
    const operationIds = operations.map((o) => o.id);
    const [deliveries, actions] = await Promise.all([this.outbox.attemptsOf(operationIds), this.audit.ofInboxEvent(id, operationIds)]);
    const keyOf = new Map(operations.map((o) => [o.id, o.operationKey]));

    const entries: TimelineEntry[] = [
      {
        at: event.receivedAt,
        kind: 'received',
        detail: {
          endpointId: event.endpointId,
          provider: event.provider,
          sourceScope: event.sourceScope,
          verifiedWith: event.verifiedWith,
        },
      },
    ];
    if (event.deliveries > 1) {
      entries.push({
        at: event.lastDeliveryAt,
        kind: 'redelivered',
        detail: { deliveries: event.deliveries, digestConflicts: event.digestConflicts },
      });
    }
    for (const a of attempts) {
      entries.push({
        at: a.at,
        kind: 'attempt',
        detail: { attempt: a.attempt, outcome: a.outcome, reason: a.reason, error: a.error, instance: instanceOf(a.lease) },
      });
    }
    for (const t of transitions) {
      entries.push({ at: t.at, kind: 'order_transition', detail: { tenantId: t.tenantId, orderId: t.orderId, from: t.from, to: t.to } });
    }
    for (const o of operations) {
      entries.push({
        at: o.createdAt,
        kind: 'operation_created',
        detail: { outboxId: o.id, operationKey: o.operationKey, destination: o.destination, operationType: o.operationType },
      });
    }
    for (const d of deliveries) {
      entries.push({
        at: d.at,
        kind: 'delivery_attempt',
        detail: {
          outboxId: d.outboxId,
          operationKey: keyOf.get(d.outboxId) ?? null,
          attempt: d.attempt,
          outcome: d.outcome,
          statusCode: d.statusCode,
          durationMs: d.durationMs,
          outcomeQuery: d.outcomeQuery,
          retryAfterMs: d.retryAfterMs,
          error: d.error,
          instance: instanceOf(d.lease),
        },
      });
    }
    for (const a of actions) {
      const told = limitedTo(a, tenants);
      entries.push({
        at: a.at,
        kind: 'operator_action',
        detail: {
          actor: told ? a.actor : null,
          role: a.role,
          action: a.action,
          target: a.target,
          reason: told ? a.reason : null,
          beforeStatus: a.beforeStatus,
          afterStatus: a.afterStatus,
        },
      });
    }
    // Stable: entries of one kind keep the order their owner returned them in.
    entries.sort((x, y) => x.at.getTime() - y.at.getTime() || RANK[x.kind] - RANK[y.kind]);
    return { event, entries, operations };
  }
}

/**
 * Whether a caller limited to `tenants` may see who took action `a` and why. A bulk action (target
 * `inbox:filter`) may span other tenants, and its reason name them: its actor and reason are shown
 * only when its filter was limited to the caller's tenants (as a token limited to them is).
 */
function limitedTo(a: AuditRecord, tenants: TenantScope): boolean {
  if (!tenants || a.target !== 'inbox:filter') return true;
  const filter = (a.details?.filter ?? {}) as { tenant?: string; tenants?: string };
  if (filter.tenant !== undefined && tenants.includes(filter.tenant)) return true;
  const listed = filter.tenants?.split(',') ?? [];
  return listed.length > 0 && listed.every((t) => tenants.includes(t));
}
