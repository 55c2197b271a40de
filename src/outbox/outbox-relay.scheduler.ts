import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { PgNotifications } from '../database/pg-notifications';
import { OutboxRelay, RELAY_BATCH_SIZE } from './outbox-relay';
import { OUTBOX_CHANNEL } from './outbox-writer';

/**
 * Runs the relay every RELAY_POLL_MS and on an `outbox` notification, only on
 * instances with the `relay` role. One round at a time; a full batch is
 * followed at once by another, so a backlog drains without waiting for ticks.
 */
@Injectable()
export class OutboxRelayScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private static readonly INTERVAL = 'outbox-relay';
  private readonly logger = new Logger(OutboxRelayScheduler.name);
  private running?: Promise<void>;
  private again = false;
  private stopped = true;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly relay: OutboxRelay,
    private readonly scheduler: SchedulerRegistry,
    private readonly notifications: PgNotifications,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.roles.has('relay')) return;
    this.stopped = false;
    this.scheduler.addInterval(OutboxRelayScheduler.INTERVAL, setInterval(() => this.tick(), this.config.relay.pollMs));
    await this.notifications.listen(OUTBOX_CHANNEL, () => this.tick());
    this.tick();
  }

  /** Starts a round unless one is running; then that round runs once more. */
  tick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain().finally(() => (this.running = undefined));
  }

  private async drain(): Promise<void> {
    do {
      this.again = false;
      try {
        const claimed = await this.relay.runOnce();
        if (claimed >= RELAY_BATCH_SIZE) this.again = true;
      } catch (error) {
        // The database may be down: the next tick tries again.
        this.logger.error({ err: (error as Error).message }, 'relay round failed');
        return;
      }
    } while (this.again && !this.stopped);
  }

  /** Stops claiming and waits for the round in flight to record its outcomes. */
  async onModuleDestroy(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.scheduler.deleteInterval(OutboxRelayScheduler.INTERVAL);
    await this.running;
  }
}
