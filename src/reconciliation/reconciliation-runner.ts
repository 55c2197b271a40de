import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelayMs } from '../common/backoff';
import { BadRequestError } from '../common/errors';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../config/app-config';
import { InboxService } from '../inbox/inbox.service';
import { IngestionService, sourceScopeOf } from '../ingestion/ingestion.service';
import { ProviderUnavailableError } from '../provider-api/provider-api.errors';
import { ReadBudget } from '../provider-api/read-budget';
import { ReconcileContext, ReconcileWindow } from './reconciler';
import { ReconcilerRegistry } from './reconciler.registry';
import { ReconciliationMetrics } from './reconciliation.metrics';
import { ReconciliationRepository, RunProgress } from './reconciliation.repository';
import { OutcomeCounts, ReconciledOutcome, ReconciliationRun } from './reconciliation.types';

/** A run's lease, renewed by every page and every wait: an instance that dies hands the run over this much later. */
export const RUN_LEASE_MS = 60_000;
/** Each run lists again this far behind the cursor: an event can show in the list a little after its `created`. */
export const CURSOR_OVERLAP_MS = 5 * 60_000;
/** Tries of one API call against 429s and outages before the run fails (and resumes from its position next time). */
const CALL_TRIES = 5;
/** The longest wait for one Retry-After inside a run; longer, and the run fails and resumes later. */
const MAX_WAIT_MS = RUN_LEASE_MS / 3;

/** What one page's missing events became: `accepted` for processing, the rest by outcome and reason. */
interface PageOutcome {
  found: number;
  accepted: number;
  outcomes: OutcomeCounts;
}

class LeaseLost extends Error {
  constructor() {
    super('lease_lost');
  }
}

/**
 * Executes one claimed run: the window from the cursor (or the operator's), the
 * provider's reconciler paging through it, each page through the acceptance path
 * with its position stored, then the cursor moved. Fenced by the run's lease.
 */
@Injectable()
export class ReconciliationRunner {
  private readonly logger = new Logger(ReconciliationRunner.name);
  readonly instanceId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: ReconciliationRepository,
    private readonly reconcilers: ReconcilerRegistry,
    private readonly ingestion: IngestionService,
    private readonly inbox: InboxService,
    private readonly budget: ReadBudget,
    private readonly metrics: ReconciliationMetrics,
    private readonly clock: Clock,
  ) {}

  /** Claims and executes the next due run; resolves with it, or undefined when none was due. */
  async runNext(): Promise<ReconciliationRun | undefined> {
    const lease = `${this.instanceId}:${randomBytes(3).toString('hex')}`;
    const run = await this.repository.claim(lease, this.clock.now(), RUN_LEASE_MS);
    if (!run) return undefined;
    await this.execute(run, lease);
    return run;
  }

  private async execute(run: ReconciliationRun, lease: string): Promise<void> {
    const endpoint = this.config.endpoints.get(run.endpointId);
    const reconciler = endpoint && this.reconcilers.find(endpoint);
    const log = { endpointId: run.endpointId, runId: run.id, requestedBy: run.requestedBy, dryRun: run.dryRun };
    if (!endpoint || !reconciler) {
      await this.repository.finish(run.id, lease, 'failed', 'endpoint_not_reconcilable', this.clock.now());
      this.logger.warn(log, 'reconciliation run failed: the endpoint has no api or no reconciler');
      return;
    }
    const window = await this.windowOf(run, endpoint);
    const context = new RunContext(run, lease, endpoint, this);
    if (run.position) this.logger.log({ ...log, position: run.position }, 'reconciliation run resumed');
    try {
      await reconciler.run(endpoint, window, context);
      await context.flush();
    } catch (error) {
      if (error instanceof LeaseLost) {
        this.logger.warn(log, 'reconciliation run lost its lease: another instance continues it');
        return;
      }
      const reason = describeFailure(error);
      await context.flush().catch(() => undefined);
      await this.repository.finish(run.id, lease, 'failed', reason, this.clock.now());
      this.metrics.run(endpoint.id, 'failed', this.clock.now());
      // The reason only: a provider's message may quote part of the key.
      this.logger.error(
        { ...log, reason },
        reason.startsWith('credentials_refused')
          ? "reconciliation run failed: the provider refused the endpoint's api key"
          : 'reconciliation run failed',
      );
      return;
    }
    const now = this.clock.now();
    if (!(await this.repository.finish(run.id, lease, 'succeeded', null, now))) return;
    const advances = run.advancesCursor && !run.dryRun;
    if (advances)
      await this.repository.advanceCursor(endpoint.id, new Date(window.to.getTime() - CURSOR_OVERLAP_MS), now, CURSOR_OVERLAP_MS);
    this.metrics.run(endpoint.id, 'succeeded', now, advances);
    this.logger.log({ ...log, ...context.totals() }, 'reconciliation run succeeded');
  }

  /** From the cursor (or the operator's `from`), never past the lookback; to the run's start (or the operator's `to`). */
  private async windowOf(run: ReconciliationRun, endpoint: EndpointConfig): Promise<ReconcileWindow> {
    const lookbackHours = endpoint.api?.reconcile?.lookbackHours ?? 72;
    const started = run.startedAt ?? this.clock.now();
    const earliest = started.getTime() - lookbackHours * 3_600_000;
    const cursor = run.windowFrom ? undefined : await this.repository.cursor(endpoint.id);
    const from = Math.max(earliest, (run.windowFrom ?? cursor?.cursorAt)?.getTime() ?? earliest);
    const to = Math.min(started.getTime(), run.windowTo?.getTime() ?? started.getTime());
    return { from: new Date(from), to: new Date(Math.max(from, to)), position: run.position ?? undefined };
  }

  // ---- used by RunContext ----

  async callWithBudget<T>(endpoint: EndpointConfig, renew: () => Promise<void>, call: () => Promise<T>): Promise<T> {
    const keyId = endpoint.api!.key.id;
    for (let attempt = 1; ; attempt++) {
      await this.takeRead(keyId, renew);
      try {
        return await call();
      } catch (error) {
        if (!(error instanceof ProviderUnavailableError) || error.reason === 'credentials_refused' || attempt >= CALL_TRIES) throw error;
        const wait = error.retryAfterMs ?? backoffDelayMs(attempt, this.config.retry);
        if (wait > MAX_WAIT_MS) throw error;
        this.logger.warn(
          { endpointId: endpoint.id, reason: error.reason, status: error.status, waitMs: wait },
          'reconciliation call waits for the provider',
        );
        await renew();
        await sleep(wait);
      }
    }
  }

  /**
   * Waits for a token of the key's read budget, which the worker's confirm reads share: a long
   * wait renews the run's lease, or another instance would take the run over meanwhile.
   */
  private async takeRead(keyId: string, renew: () => Promise<void>): Promise<void> {
    let renewedAt = this.clock.now().getTime();
    while ((await this.budget.take(keyId, 1)) === 0) {
      if (this.clock.now().getTime() - renewedAt >= RUN_LEASE_MS / 3) {
        await renew();
        renewedAt = this.clock.now().getTime();
      }
      await sleep(this.budget.delayMsFor(1));
    }
  }

  async acceptPage(endpoint: EndpointConfig, events: unknown[], dryRun: boolean): Promise<PageOutcome> {
    const identified = events.map((event) => {
      try {
        return { event, id: this.ingestion.identityOf(endpoint, event) };
      } catch {
        return { event, id: undefined };
      }
    });
    const valid = identified.filter((x) => x.id !== undefined);
    this.metrics.event(endpoint.id, 'invalid', identified.length - valid.length);
    // A row another endpoint of the tenant stored ignored is not this endpoint's copy: its copy takes it over.
    const present = await this.inbox.present(
      valid.map((x) => x.id!),
      this.ingestion.takesOverIgnored(endpoint) ? endpoint.id : undefined,
    );
    const missing = valid.filter((_, i) => !present[i]);
    this.metrics.event(endpoint.id, 'present', valid.length - missing.length);
    // An event without an identity is not in the inbox and cannot be stored: found missing, invalid.
    const unidentified = identified.length - valid.length;
    const page: PageOutcome = { found: missing.length + unidentified, accepted: 0, outcomes: {} };
    if (unidentified > 0) page.outcomes['invalid:no_identity'] = unidentified;
    if (dryRun) {
      this.metrics.event(endpoint.id, 'would_accept', missing.length);
      return page;
    }
    // All of a page at once: they share the group commit's multi-row insert, like concurrent webhooks.
    // The inbox ids then need not follow the provider's order; the state machine does not need them to.
    const results = await Promise.all(missing.map(({ event }) => this.acceptOne(endpoint, event)));
    results.forEach(({ outcome, reason }, i) => {
      if (outcome === 'accepted') page.accepted++;
      else {
        const key = reason ? `${outcome}:${reason}` : outcome;
        page.outcomes[key] = (page.outcomes[key] ?? 0) + 1;
      }
      this.metrics.event(endpoint.id, outcome, 1, reason);
      this.logger.log(
        { endpointId: endpoint.id, eventId: missing[i].id!.eventId, outcome, reason },
        'reconciliation brought in a missing event',
      );
    });
    return page;
  }

  private async acceptOne(endpoint: EndpointConfig, event: unknown): Promise<{ outcome: ReconciledOutcome; reason?: string }> {
    try {
      const result = await this.ingestion.acceptFromApi(endpoint, event);
      return { outcome: result.status, reason: result.reason };
    } catch (error) {
      // JSON PostgreSQL cannot store: counted, and the run goes on (a webhook of it would be refused too).
      if (!(error instanceof BadRequestError)) throw error;
      return { outcome: 'invalid', reason: error.reason };
    }
  }

  /** Under the endpoint's namespace, or one an earlier version stored its events under (WebhookProvider.formerNamespaces). */
  async inInbox(endpoint: EndpointConfig, namespace: string, events: { eventId: string; occurredAt?: Date }[]): Promise<boolean[]> {
    const scopes = [sourceScopeOf(endpoint, namespace), ...this.ingestion.formerScopes(endpoint)];
    const present = await this.inbox.present(scopes.flatMap((sourceScope) => events.map((event) => ({ sourceScope, ...event }))));
    return events.map((_, i) => scopes.some((_, s) => present[s * events.length + i]));
  }

  /** Resends asked for, and those the provider refused (by reason). */
  countRedeliveries(endpoint: EndpointConfig, count: number, refused: OutcomeCounts = {}): void {
    this.metrics.event(endpoint.id, 'redelivery_requested', count);
    for (const [key, n] of Object.entries(refused)) this.metrics.event(endpoint.id, 'redelivery_refused', n, key.split(':')[1]);
  }

  progress(run: ReconciliationRun, lease: string, p: RunProgress): Promise<boolean> {
    return this.repository.progress(run.id, lease, p, this.clock.now(), RUN_LEASE_MS);
  }

  leaseLost(): Error {
    return new LeaseLost();
  }
}

/** The ReconcileContext of one run: counts calls, stores progress per page, fenced by the lease. */
class RunContext implements ReconcileContext {
  private calls = 0;
  private readonly total = { listed: 0, foundMissing: 0, accepted: 0, apiCalls: 0 };
  private readonly outcomes: OutcomeCounts = {};

  constructor(
    private readonly run: ReconciliationRun,
    private readonly lease: string,
    private readonly endpoint: EndpointConfig,
    private readonly runner: ReconciliationRunner,
  ) {}

  get dryRun(): boolean {
    return this.run.dryRun;
  }

  call<T>(call: () => Promise<T>): Promise<T> {
    return this.runner.callWithBudget(
      this.endpoint,
      () => this.store({ listed: 0, foundMissing: 0, accepted: 0 }),
      () => {
        this.calls++;
        return call();
      },
    );
  }

  async accept(events: unknown[], position: string): Promise<void> {
    const { found, accepted, outcomes } = await this.runner.acceptPage(this.endpoint, events, this.run.dryRun);
    await this.store({ position, listed: events.length, foundMissing: found, accepted, outcomes });
  }

  inInbox(namespace: string, events: { eventId: string; occurredAt?: Date }[]): Promise<boolean[]> {
    return this.runner.inInbox(this.endpoint, namespace, events);
  }

  async redelivered(count: number, listed: number, position: string, outcomes?: OutcomeCounts): Promise<void> {
    if (!this.run.dryRun) this.runner.countRedeliveries(this.endpoint, count, outcomes);
    const refused = Object.values(outcomes ?? {}).reduce((n, c) => n + c, 0);
    await this.store({ position, listed, foundMissing: count + refused, accepted: 0, outcomes });
  }

  async wait(ms: number): Promise<void> {
    if (ms > MAX_WAIT_MS) throw new ProviderUnavailableError('rate_limited', undefined, ms);
    await this.store({ listed: 0, foundMissing: 0, accepted: 0 });
    await sleep(ms);
  }

  /** Stores the calls not yet counted. */
  async flush(): Promise<void> {
    if (this.calls > 0) await this.store({ listed: 0, foundMissing: 0, accepted: 0 });
  }

  totals(): Record<string, unknown> {
    return { ...this.total, outcomes: { ...this.outcomes } };
  }

  private async store(p: Omit<RunProgress, 'apiCalls'>): Promise<void> {
    const apiCalls = this.calls;
    this.calls = 0;
    if (!(await this.runner.progress(this.run, this.lease, { ...p, apiCalls }))) throw this.runner.leaseLost();
    this.total.listed += p.listed;
    this.total.foundMissing += p.foundMissing;
    this.total.accepted += p.accepted;
    this.total.apiCalls += apiCalls;
    for (const [key, count] of Object.entries(p.outcomes ?? {})) this.outcomes[key] = (this.outcomes[key] ?? 0) + count;
  }
}

function describeFailure(error: unknown): string {
  if (error instanceof ProviderUnavailableError) return error.message;
  return error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : 'unknown_error';
}
