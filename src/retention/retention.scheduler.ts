import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { RetentionService } from './retention.service';

const INTERVAL_NAME = 'retention';
const TIMEOUT_NAME = 'retention-first-run';
/** Retention is not urgent: once a minute, and once soon after start (not during boot). */
export const RETENTION_INTERVAL_MS = 60_000;
const FIRST_RUN_DELAY_MS = 5_000;

/** Runs the retention job, only on instances with the `maintenance` role; one run at a time. */
@Injectable()
export class RetentionScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RetentionScheduler.name);
  private running?: Promise<void>;
  private stopped = true;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly retention: RetentionService,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.roles.has('maintenance')) return;
    this.stopped = false;
    this.scheduler.addInterval(INTERVAL_NAME, setInterval(() => this.tick(), RETENTION_INTERVAL_MS));
    this.scheduler.addTimeout(TIMEOUT_NAME, setTimeout(() => this.tick(), FIRST_RUN_DELAY_MS));
  }

  /** Starts a run unless one is still going (a long backlog spans ticks). */
  tick(): void {
    if (this.stopped || this.running) return;
    this.running = this.retention
      .runOnce(() => this.stopped)
      .then(
        () => undefined,
        // Typically the database is unreachable; the next tick tries again.
        (error: unknown) => this.logger.error({ err: (error as Error).message }, 'retention run failed'),
      )
      .finally(() => (this.running = undefined));
  }

  /** Stops between batches and waits for the statement in flight. */
  async onModuleDestroy(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.scheduler.deleteInterval(INTERVAL_NAME);
    if (this.scheduler.doesExist('timeout', TIMEOUT_NAME)) this.scheduler.deleteTimeout(TIMEOUT_NAME);
    await this.running;
  }
}
