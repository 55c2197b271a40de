import { Logger } from '@nestjs/common';
import { DestinationSettings } from '../../config/destinations';
import { DeliveryResult, Destination, OperationOutcome, OutboxEntry } from './destination';

/**
 * Dev mode only (ERP_URL / EMAIL_URL unset outside production): stands in for
 * a real destination so `npm start` runs the whole pipeline. It logs each
 * operation (key and type, never the payload: it holds email addresses) and
 * remembers keys in memory, so a resend under the same key is not a second effect.
 */
export class DevSinkDestination implements Destination {
  readonly configured = true;
  private readonly logger: Logger;
  private readonly applied = new Set<string>();

  /** `settings`: those of the destination it stands in for (circuit, rate limit). */
  constructor(
    readonly name: string,
    readonly settings: DestinationSettings,
  ) {
    this.logger = new Logger(`DevSink:${name}`);
  }

  async deliver(entry: OutboxEntry): Promise<DeliveryResult> {
    const fields = { operationKey: entry.operationKey, type: entry.operationType, attempt: entry.attempts };
    if (this.applied.has(entry.operationKey)) {
      this.logger.log(fields, 'dev sink: already applied (same Idempotency-Key)');
      return { kind: 'delivered', statusCode: 409 };
    }
    this.applied.add(entry.operationKey);
    this.logger.log(fields, 'dev sink: operation applied');
    return { kind: 'delivered', statusCode: 200 };
  }

  async queryOutcome(operationKey: string): Promise<OperationOutcome> {
    return this.applied.has(operationKey) ? 'applied' : 'not_applied';
  }
}
