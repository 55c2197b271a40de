import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ACCEPT } from './inbox.queries';
import { AcceptRequest, AcceptResult, InboxStatus } from './inbox.types';

/** The only owner of `webhook_inbox` SQL. */
@Injectable()
export class InboxRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** One autocommit statement: when it returns, the row is durably committed. */
  async accept(r: AcceptRequest): Promise<AcceptResult> {
    const rows: { id: string; inserted: boolean; status: InboxStatus; same_digest: boolean }[] =
      await this.dataSource.query(ACCEPT, [
        r.sourceScope,
        r.eventId,
        r.tenantId,
        r.provider,
        r.endpointId,
        r.eventType,
        r.payloadJson,
        r.payloadSha256,
        r.verifiedWith,
        r.status,
        r.statusReason ?? null,
      ]);
    const row = rows[0];
    return {
      outcome: row.inserted ? 'accepted' : 'duplicate',
      id: String(row.id),
      status: row.status,
      digestConflict: !row.same_digest,
    };
  }
}
