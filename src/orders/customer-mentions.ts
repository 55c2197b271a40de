import { MAX_PAYLOAD_DEPTH } from '../common/json-depth';

/**
 * What an erasure looks for in a stored payload: whole JSON values equal to one of
 * the customer's addresses (trimmed, case-insensitive), or, for the orders' tenants,
 * one of their order ids as the event's `data.object.metadata.order_id`. Never a
 * substring of the text: `jan@example.com` is not a mention of `an@example.com`.
 *
 * The walks are iterative with a depth bound, so a hostile payload can neither
 * overflow the stack nor pass unchecked: past the bound they throw, and the caller
 * reports the row as not checked.
 */
export class CustomerMentions {
  private readonly addresses: ReadonlySet<string>;

  constructor(
    addresses: Iterable<string>,
    /** Order ids by tenant. */
    private readonly orderIds: ReadonlyMap<string, ReadonlySet<string>>,
    private readonly maxDepth = MAX_PAYLOAD_DEPTH,
  ) {
    this.addresses = new Set([...addresses].map(normalise).filter((a) => a !== ''));
  }

  /** Whether the payload holds one of the addresses anywhere (as a value or a key). */
  holdsAddress(payload: unknown): boolean {
    let found = false;
    this.walk(payload, (text) => {
      found ||= this.isAddress(text);
      return undefined;
    });
    return found;
  }

  /** Whether the payload is the event of one of `tenantId`'s orders. */
  namesOrder(tenantId: string, payload: unknown): boolean {
    const id = (payload as any)?.data?.object?.metadata?.order_id;
    return typeof id === 'string' && this.orderIds.get(tenantId)?.has(id) === true;
  }

  /** The payload with every value and key equal to an address replaced by '' (changed in place), and how many were. */
  redact(payload: unknown): { payload: unknown; replaced: number } {
    let replaced = 0;
    const root = this.walk(payload, (text) => {
      if (!this.isAddress(text)) return undefined;
      replaced++;
      return '';
    });
    return { payload: root, replaced };
  }

  private isAddress(text: string): boolean {
    return this.addresses.has(normalise(text));
  }

  /** Visits every string (values and keys); `visit` returns a replacement or undefined. Returns the root, replaced if a string. */
  private walk(root: unknown, visit: (text: string) => string | undefined): unknown {
    if (typeof root === 'string') return visit(root) ?? root;
    const stack: { node: object; depth: number }[] = [];
    if (root !== null && typeof root === 'object') stack.push({ node: root, depth: 1 });
    while (stack.length > 0) {
      const { node, depth } = stack.pop()!;
      if (depth > this.maxDepth) throw new RangeError(`payload nested deeper than ${this.maxDepth} levels`);
      const record = node as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const value = record[key];
        if (typeof value === 'string') {
          const replacement = visit(value);
          if (replacement !== undefined) record[key] = replacement;
        } else if (value !== null && typeof value === 'object') {
          stack.push({ node: value, depth: depth + 1 });
        }
        if (!Array.isArray(node)) {
          const renamed = visit(key);
          if (renamed !== undefined) {
            const kept = record[key];
            delete record[key];
            record[renamed] = kept;
          }
        }
      }
    }
    return root;
  }
}

function normalise(text: string): string {
  return text.trim().toLowerCase();
}
