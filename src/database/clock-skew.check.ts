import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { APP_CONFIG, AppConfig, clockSkewAllowanceMs } from '../config/app-config';

/**
 * Leases and retry times are written with this instance's clock and read by
 * every other instance: a clock that runs ahead takes over leases that are still
 * held, one that runs behind keeps them too long. Refuse to start when the clock
 * is off PostgreSQL's by more than a quarter of the shortest lease.
 */
@Injectable()
export class ClockSkewCheck implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const before = this.clock.now().getTime();
    const [{ now }]: { now: Date }[] = await this.dataSource.query('SELECT now()');
    const after = this.clock.now().getTime();
    // Compared at the middle of the round trip; the round trip itself is the error bar.
    const skewMs = Math.round((before + after) / 2 - now.getTime());
    const allowedMs = Math.max(after - before, clockSkewAllowanceMs(this.config));
    if (Math.abs(skewMs) > allowedMs) {
      throw new Error(
        `clock skew: this host's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'ahead of' : 'behind'} PostgreSQL's; ` +
          `leases need it within ${Math.round(allowedMs)} ms: synchronise both clocks (NTP)`,
      );
    }
  }
}
