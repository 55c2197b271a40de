import { EndpointConfig } from '../config/app-config';
import { InboxStatus, SourceFacts } from './inbox.types';

/** Why an endpoint does not act on a verified event. */
export type AcceptanceRefusal = 'unexpected_source' | 'event_type_not_accepted';

/**
 * The acceptance decision: a signature authenticates an event, the endpoint's
 * `expect` and `eventTypes` authorise it. Made at accept time and made again, on
 * the current configuration, by a replay and by the worker before any handler, so
 * nothing later can give an event the effect its endpoint refused.
 */
export function acceptanceRefusal(endpoint: EndpointConfig, eventType: string, facts: SourceFacts): AcceptanceRefusal | undefined {
  for (const [key, expected] of Object.entries(endpoint.expect ?? {})) {
    // String comparison: a hook id may be written 123 in the file and arrive as "123" in a header.
    if (String(facts[key]) !== String(expected)) return 'unexpected_source';
  }
  if (endpoint.eventTypes && !endpoint.eventTypes.has(eventType)) return 'event_type_not_accepted';
  return undefined;
}

/** Why an operator may not replay a settled row (a 409 reason), or undefined. */
export type ReplayRefusal = 'source_not_accepted' | 'event_type_not_accepted' | 'source_facts_missing' | 'endpoint_not_configured';

export interface ReplayCandidate {
  status: InboxStatus;
  statusReason: string | null;
  endpointId: string;
  eventType: string;
  /** NULL for rows accepted before the facts were stored. */
  sourceFacts: SourceFacts | null;
}

/**
 * A row ignored as `unexpected_source` is never replayed: its sender was refused.
 * Any other settled row is replayed only when its endpoint's current configuration
 * accepts it, which needs the facts it was accepted on when the endpoint has an `expect`.
 */
export function replayRefusal(endpoints: ReadonlyMap<string, EndpointConfig>, row: ReplayCandidate): ReplayRefusal | undefined {
  if (row.status === 'ignored' && row.statusReason === 'unexpected_source') return 'source_not_accepted';
  const endpoint = endpoints.get(row.endpointId);
  if (!endpoint) return 'endpoint_not_configured';
  if (row.sourceFacts === null && Object.keys(endpoint.expect ?? {}).length > 0) return 'source_facts_missing';
  const refusal = acceptanceRefusal(endpoint, row.eventType, row.sourceFacts ?? {});
  return refusal === 'unexpected_source' ? 'source_not_accepted' : refusal;
}

/**
 * The worker's re-check before any handler runs, on the current configuration.
 * A row without stored facts (accepted by an older version during a rolling
 * deploy) keeps its accept-time `expect` decision; its type is still checked.
 */
export function processingRefusal(
  endpoints: ReadonlyMap<string, EndpointConfig>,
  event: { endpointId: string; eventType: string; sourceFacts: SourceFacts | null },
): AcceptanceRefusal | 'endpoint_not_configured' | undefined {
  const endpoint = endpoints.get(event.endpointId);
  if (!endpoint) return 'endpoint_not_configured';
  if (event.sourceFacts === null)
    return endpoint.eventTypes && !endpoint.eventTypes.has(event.eventType) ? 'event_type_not_accepted' : undefined;
  return acceptanceRefusal(endpoint, event.eventType, event.sourceFacts);
}
