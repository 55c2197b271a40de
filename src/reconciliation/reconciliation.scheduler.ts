import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { ReconciliationRunner } from './reconciliation-runner';
import { ReconciliationService } from './reconciliation.service';

const INTERVAL_NAME = 'reconciliation';
/** How often a maintenance instance looks for due and requested runs. */
export const RECONCILIATION_TICK_MS = 5_000;

/** Schedules and runs reconciliation, only on instances with the `maintenance` role; one run at a time per instance. */
@Injectable()
export class ReconciliationScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ReconciliationScheduler.name);
  private running?: Promise<void>;
  private stopped = true;
  private shuttingDown = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly service: ReconciliationService,
    private readonly runner: ReconciliationRunner,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.roles.has('maintenance') || this.service.reconcilable().length === 0) return;
    this.stopped = false;
    this.scheduler.addInterval(
      INTERVAL_NAME,
      setInterval(() => this.tick(), RECONCILIATION_TICK_MS),
    );
  }

  tick(): void {
    if (this.stopped || this.running) return;
    this.running = this.runOnce()
      .then(
        () => undefined,
        (error: unknown) => this.logger.error({ err: (error as Error).message }, 'reconciliation tick failed'),
      )
      .finally(() => (this.running = undefined));
  }

  /** Schedules what is due, then runs every claimable run; resolves with how many ran. */
  async runOnce(): Promise<number> {
    await this.service.scheduleDue();
    let ran = 0;
    while (!this.shuttingDown && (await this.runner.runNext())) ran++;
    return ran;
  }

  async onModuleDestroy(): Promise<void> {
    this.shuttingDown = true;
    if (this.stopped) return;
    this.stopped = true;
    this.scheduler.deleteInterval(INTERVAL_NAME);
    await this.running;
  }
}
