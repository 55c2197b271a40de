import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { PgNotifications } from '../database/pg-notifications';
import { InboxWorker } from './inbox-worker';
import { INBOX_CHANNEL } from './inbox.types';

const INTERVAL_NAME = 'inbox-worker';

/**
 * Wakes the worker every WORKER_POLL_MS and as soon as any instance accepts an
 * event (LISTEN/NOTIFY; at once inside this instance). Only in instances with
 * the `worker` role.
 */
@Injectable()
export class InboxWorkerScheduler implements OnApplicationBootstrap, OnModuleDestroy {
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
    this.worker.start();
    this.scheduler.addInterval(
      INTERVAL_NAME,
      setInterval(() => this.worker.wake(), this.config.worker.pollMs),
    );
    await this.notifications.listen(INBOX_CHANNEL, () => this.worker.wake());
    this.worker.wake();
  }

  async onModuleDestroy(): Promise<void> {
    if (!this.started) return;
    this.scheduler.deleteInterval(INTERVAL_NAME);
    // In-flight events finish (or roll back) before the pool closes.
    await this.worker.stop();
  }
}
