import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { PayloadReencryptionService } from './payload-reencryption.service';

const INTERVAL_NAME = 'payload-reencryption';
const TIMEOUT_NAME = 'payload-reencryption-first-run';
export const REENCRYPTION_INTERVAL_MS = 60_000;
const FIRST_RUN_DELAY_MS = 10_000;

/** Runs the re-encryption job on instances with the `maintenance` role and a key ring; one run at a time. */
@Injectable()
export class PayloadReencryptionScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(PayloadReencryptionScheduler.name);
  private running?: Promise<void>;
  private stopped = true;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly job: PayloadReencryptionService,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.roles.has('maintenance') || !this.config.payloadKeys) return;
    this.stopped = false;
    this.scheduler.addInterval(INTERVAL_NAME, setInterval(() => this.tick(), REENCRYPTION_INTERVAL_MS));
    this.scheduler.addTimeout(TIMEOUT_NAME, setTimeout(() => this.tick(), FIRST_RUN_DELAY_MS));
  }

  tick(): void {
    if (this.stopped || this.running) return;
    this.running = this.job
      .runOnce(() => this.stopped)
      .then(
        () => undefined,
        (error: unknown) => this.logger.error({ err: (error as Error).message }, 'payload re-encryption run failed'),
      )
      .finally(() => (this.running = undefined));
  }

  /** Stops between batches and waits for the batch in flight. */
  async onModuleDestroy(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.scheduler.deleteInterval(INTERVAL_NAME);
    if (this.scheduler.doesExist('timeout', TIMEOUT_NAME)) this.scheduler.deleteTimeout(TIMEOUT_NAME);
    await this.running;
  }
}
