import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { PgNotifications } from '../database/pg-notifications';
import { InboxWorker } from './inbox-worker';

export const INBOX_CHANNEL = 'webhook_inbox';
const INTERVAL_NAME = 'inbox-worker';

/**
 * Runs the worker every WORKER_POLL_MS and as soon as any instance accepts an
 * event (LISTEN/NOTIFY), draining until a claim comes back empty. Only in
 * instances with the `worker` role.
 */
@Injectable()
export class InboxWorkerScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(InboxWorkerScheduler.name);
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private started = false;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly worker: InboxWorker,
    private readonly scheduler: SchedulerRegistry,
    private readonly notifications: PgNotifications,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.roles.has('worker')) return;
    this.started = true;
    this.scheduler.addInterval(
      INTERVAL_NAME,
      setInterval(() => this.wake(), this.config.worker.pollMs),
    );
    await this.notifications.listen(INBOX_CHANNEL, () => this.wake());
    this.wake();
  }

  /** Starts a drain, or asks the running one to go round again. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      await this.worker.drain(() => this.stopped);
    } catch (error) {
      // Typically the database is unreachable; the next tick tries again.
      this.logger.error({ err: (error as Error).message }, 'worker round failed');
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.started) this.scheduler.deleteInterval(INTERVAL_NAME);
    // In-flight events finish (or roll back) before the pool closes.
    await this.running;
  }
}
