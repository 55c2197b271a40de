import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { PgNotifications } from '../database/pg-notifications';
import { OutboxRelay } from './outbox-relay';
import { OUTBOX_CHANNEL, OUTBOX_ERASURE_CHANNEL } from './outbox.types';

/**
 * Runs the relay every RELAY_POLL_MS and on an `outbox` notification, only on
 * instances with the `relay` role. Up to two rounds overlap, so an entry
 * committed while a round waits for its slowest delivery is claimed at once
 * instead of after it (the per-destination limits are shared by the rounds). Where this
 * instance's writer left another tenant's entries pending while both rounds wait, a claim
 * for them starts beside the rounds (OutboxRelay.claimForOthers, one at a time).
 * A round that took a destination's whole budget is followed at once by another,
 * so a backlog drains without waiting for ticks. Started, the relay also takes entries handed over by this
 * instance's writer (OutboxRelay.handOver); the ticks still read each destination's
 * shared state, which that decision relies on.
 */
@Injectable()
export class OutboxRelayScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private static readonly INTERVAL = 'outbox-relay';
  private static readonly ROUNDS = 2;
  private readonly logger = new Logger(OutboxRelayScheduler.name);
  private readonly rounds = new Set<Promise<void>>();
  private again = false;
  /** The claim for other tenants in flight (claimForOthers), beside the rounds. */
  private forOthers?: Promise<unknown>;
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
    this.scheduler.addInterval(
      OutboxRelayScheduler.INTERVAL,
      setInterval(() => this.tick(), this.config.relay.pollMs),
    );
    await this.notifications.listen(OUTBOX_CHANNEL, () => this.tick());
    await this.notifications.listen(OUTBOX_ERASURE_CHANNEL, () => void this.relay.recheckErasures());
    this.relay.start(() => this.tick());
    this.tick();
  }

  /** Starts a round unless enough are running; then one of them is followed by another. */
  tick(): void {
    if (this.stopped) return;
    if (this.rounds.size >= OutboxRelayScheduler.ROUNDS) {
      this.again = true;
      if (this.relay.othersWaiting && !this.forOthers) {
        this.forOthers = this.relay
          .claimForOthers()
          .catch((error: Error) => this.logger.error({ err: error.message }, 'relay round failed'))
          .finally(() => {
            this.forOthers = undefined;
            // A writer's word that came during this claim.
            if (this.relay.othersWaiting) this.tick();
          });
      }
      return;
    }
    this.again = false;
    const round = this.round().finally(() => {
      this.rounds.delete(round);
      if (this.again) this.tick();
    });
    this.rounds.add(round);
  }

  private async round(): Promise<void> {
    try {
      await this.relay.runOnce();
      if (this.relay.behind) this.again = true;
    } catch (error) {
      // The database may be down: the next tick tries again.
      this.logger.error({ err: (error as Error).message }, 'relay round failed');
    }
  }

  /** Stops claiming and waits for the rounds in flight to record their outcomes. */
  async onModuleDestroy(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.scheduler.deleteInterval(OutboxRelayScheduler.INTERVAL);
    await Promise.all([...this.rounds, this.forOthers, this.relay.stop()]);
    // A claim that was in flight above has queued its sends since: wait for them too.
    await this.relay.stop();
  }
}
