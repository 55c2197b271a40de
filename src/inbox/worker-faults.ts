import { Injectable } from '@nestjs/common';
import { InboxEvent } from './inbox.types';
import { UnitOfWork } from '../database/unit-of-work';

/**
 * Test seam for crash and fencing scenarios. `beforeComplete` runs inside the
 * event's transaction after the handler's business writes and before the fenced
 * completion and the commit. It does nothing unless a test replaces it
 * (`app.get(WorkerFaults).beforeComplete = ...`); production never does.
 */
@Injectable()
export class WorkerFaults {
  beforeComplete: (event: InboxEvent, tx: UnitOfWork) => Promise<void> = async () => undefined;
}
