import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';

export interface MaintenanceJob {
  /** Runs batches until done or until `stopping()` says so. */
  runOnce(stopping: () => boolean): Promise<unknown>;
}

/**
 * Runs a maintenance job on an interval and once soon after start (not during boot),
 * one run at a time: a long backlog spans ticks. Stopping waits for the batch in flight.
 */
export abstract class MaintenanceJobScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(this.constructor.name);
  private running?: Promise<void>;
  private stopped = true;

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
    this.scheduler.addInterval(this.name, setInterval(() => this.tick(), this.timing.intervalMs));
    this.scheduler.addTimeout(`${this.name}-first-run`, setTimeout(() => this.tick(), this.timing.firstRunDelayMs));
  }

  /** Starts a run unless one is still going. */
  tick(): void {
    if (this.stopped || this.running) return;
    this.running = this.job
      .runOnce(() => this.stopped)
      .then(
        () => undefined,
        // Typically the database is unreachable; the next tick tries again.
        (error: unknown) => this.logger.error({ err: (error as Error).message }, `${this.timing.label} run failed`),
      )
      .finally(() => (this.running = undefined));
  }

  async onModuleDestroy(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.scheduler.deleteInterval(this.name);
    const firstRun = `${this.name}-first-run`;
    if (this.scheduler.doesExist('timeout', firstRun)) this.scheduler.deleteTimeout(firstRun);
    await this.running;
  }
}
