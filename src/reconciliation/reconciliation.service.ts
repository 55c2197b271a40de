import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Actor, AuditService } from '../audit/audit.service';
import { Clock } from '../common/clock';
import { BadRequestError, NotFoundError } from '../common/errors';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../config/app-config';
import { ReconcilerRegistry } from './reconciler.registry';
import { ReconciliationRepository } from './reconciliation.repository';
import { ReconciliationRun } from './reconciliation.types';
import { runInTransaction } from '../database/unit-of-work';

export interface RunRequest {
  endpoint?: string;
  from?: Date;
  to?: Date;
  dryRun: boolean;
  reason: string;
}

export interface EndpointReconciliation {
  endpointId: string;
  provider: string;
  /** Scheduled runs on (`api.reconcile.enabled`); on-demand runs work either way. */
  scheduled: boolean;
  intervalSeconds: number | null;
  lookbackHours: number;
  /** Up to where the provider's history was compared (a scheduled run starts here). */
  cursor: Date | null;
  lastSuccessAt: Date | null;
  lastRun: ReconciliationRun | null;
  /** Events found missing by the recent runs, and their errors. */
  recentRuns: ReconciliationRun[];
}

/** How many runs per endpoint GET /admin/reconciliation shows. */
const RECENT = 5;

/** The reconciliation use cases: what each endpoint's state is, operators' runs (audited), scheduling. */
@Injectable()
export class ReconciliationService {
  private readonly logger = new Logger(ReconciliationService.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly repository: ReconciliationRepository,
    private readonly reconcilers: ReconcilerRegistry,
    private readonly audit: AuditService,
    private readonly clock: Clock,
  ) {}

  /** Endpoints with an `api` key and a reconciler for their provider. */
  /** Retention (RETENTION_RECONCILIATION_RUN_DAYS): one batch of finished runs that ended before `before`. */
  pruneRuns(before: Date, limit: number): Promise<number> {
    return this.repository.pruneRuns(before, limit);
  }

  reconcilable(): EndpointConfig[] {
    return [...this.config.endpoints.values()].filter((e) => this.reconcilers.find(e) !== undefined);
  }

  async overview(): Promise<EndpointReconciliation[]> {
    const endpoints = this.reconcilable();
    const ids = endpoints.map((e) => e.id);
    const [cursors, runs] = await Promise.all([this.repository.cursors(), this.repository.recentRuns(ids, RECENT)]);
    return endpoints.map((e) => {
      const cursor = cursors.find((c) => c.endpointId === e.id);
      const recentRuns = runs.filter((r) => r.endpointId === e.id);
      return {
        endpointId: e.id,
        provider: e.provider,
        scheduled: e.api?.reconcile?.enabled ?? false,
        intervalSeconds: e.api?.reconcile?.intervalSeconds ?? null,
        lookbackHours: e.api?.reconcile?.lookbackHours ?? 72,
        cursor: cursor?.cursorAt ?? null,
        lastSuccessAt: cursor?.lastSuccessAt ?? null,
        lastRun: recentRuns[0] ?? null,
        recentRuns,
      };
    });
  }

  /**
   * Records runs for an instance with the maintenance role to execute, one per
   * endpoint (all reconcilable ones without `endpoint`), each with its audit row in
   * one transaction. An endpoint that already has a run waiting is skipped.
   */
  async request(
    who: Actor,
    req: RunRequest,
  ): Promise<{ runs: { id: string; endpointId: string }[]; skipped: { endpointId: string; reason: string }[] }> {
    const targets = req.endpoint ? [this.target(req.endpoint)] : this.reconcilable();
    const now = this.clock.now();
    this.checkWindow(targets, req, now);
    return runInTransaction(this.dataSource, async (tx) => {
      const runs: { id: string; endpointId: string }[] = [];
      const skipped: { endpointId: string; reason: string }[] = [];
      for (const endpoint of targets) {
        const id = await this.repository.request(
          tx,
          {
            endpointId: endpoint.id,
            requestedBy: who.name,
            reason: req.reason,
            dryRun: req.dryRun,
            from: req.from,
            to: req.to,
            // An explicit window is a look at the past; only a run from the cursor moves it.
            advancesCursor: req.from === undefined && req.to === undefined,
          },
          now,
        );
        if (!id) {
          skipped.push({ endpointId: endpoint.id, reason: 'run_already_requested' });
          continue;
        }
        await this.audit.record(tx, who, {
          action: 'reconciliation.run',
          target: `reconciliation:${endpoint.id}`,
          reason: req.reason,
          afterStatus: 'requested',
          details: { runId: id, dryRun: req.dryRun, from: req.from?.toISOString() ?? null, to: req.to?.toISOString() ?? null },
        });
        runs.push({ id, endpointId: endpoint.id });
      }
      this.logger.log(
        { actor: who.name, runs: runs.map((r) => r.id), skipped: skipped.length, dryRun: req.dryRun },
        'reconciliation requested',
      );
      return { runs, skipped };
    });
  }

  /** Adds a scheduled run for each endpoint whose interval has passed (maintenance role). */
  async scheduleDue(): Promise<void> {
    const now = this.clock.now();
    for (const endpoint of this.reconcilable()) {
      const reconcile = endpoint.api?.reconcile;
      if (reconcile?.enabled) await this.repository.schedule(endpoint.id, now, reconcile.intervalSeconds);
    }
  }

  private target(endpointId: string): EndpointConfig {
    const endpoint = this.config.endpoints.get(endpointId);
    if (!endpoint) throw new NotFoundError('unknown_endpoint', 'no such webhook endpoint');
    if (!this.reconcilers.find(endpoint))
      throw new BadRequestError('not_reconcilable', 'the endpoint has no api key or its provider no reconciler');
    return endpoint;
  }

  /** A window must lie inside every target's lookback: an older event may have lost its identity row. */
  private checkWindow(targets: EndpointConfig[], req: RunRequest, now: Date): void {
    if (req.from && req.to && req.from >= req.to) throw new BadRequestError('invalid_window', '"from" must be before "to"');
    if (req.to && req.to > now) throw new BadRequestError('invalid_window', '"to" is in the future');
    for (const endpoint of targets) {
      const hours = endpoint.api?.reconcile?.lookbackHours ?? 72;
      if (req.from && req.from.getTime() < now.getTime() - hours * 3_600_000) {
        throw new BadRequestError('window_too_old', `"from" is further back than the lookback of ${endpoint.id} (${hours} h)`);
      }
    }
  }
}
