import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';

export interface MaintenanceJob {
  /** Runs batches until done or until `stopping()` says so; `capped`: work is left, run again soon. */
  runOnce(stopping: () => boolean): Promise<{ capped?: boolean } | unknown>;
}

/** After a run that stopped at its cap: the next one starts this soon, not at the next interval. */
export const CAPPED_FOLLOW_UP_MS = 1_000;

/**
 * Runs a maintenance job on an interval and once soon after start (not during boot),
 * one run at a time: a long backlog spans runs, each starting a second after a capped
 * one. Stopping waits for the batch in flight.
 */
export abstract class MaintenanceJobScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(this.constructor.name);
  private running?: Promise<void>;
  private stopped = true;
  private followUp?: NodeJS.Timeout;

  protected constructor(
    private readonly name: string,
    /** `label` names the job in its log line. */
    private readonly timing: { label: string; intervalMs: number; firstRunDelayMs: number },
    private readonly job: MaintenanceJob,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  /** Whether this instance runs the job (its roles and settings). */
  protected abstract enabled(): boolean;

  onApplicationBootstrap(): void {
    if (!this.enabled()) return;
    this.stopped = false;
    this.scheduler.addInterval(
      this.name,
      setInterval(() => this.tick(), this.timing.intervalMs),
    );
    this.scheduler.addTimeout(
      `${this.name}-first-run`,
      setTimeout(() => this.tick(), this.timing.firstRunDelayMs),
    );
  }

  /** Starts a run unless one is still going. */
  tick(): void {
    if (this.stopped || this.running) return;
    this.running = this.job
      .runOnce(() => this.stopped)
      .then(
        (result) => {
          if (!this.stopped && (result as { capped?: boolean } | undefined)?.capped) {
            this.followUp = setTimeout(() => this.tick(), CAPPED_FOLLOW_UP_MS);
          }
        },
        // Typically the database is unreachable; the next tick tries again.
        (error: unknown) => this.logger.error({ err: (error as Error).message }, `${this.timing.label} run failed`),
      )
      .finally(() => (this.running = undefined));
  }

  async onModuleDestroy(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.scheduler.deleteInterval(this.name);
    clearTimeout(this.followUp);
    const firstRun = `${this.name}-first-run`;
    if (this.scheduler.doesExist('timeout', firstRun)) this.scheduler.deleteTimeout(firstRun);
    await this.running;
  }
}
