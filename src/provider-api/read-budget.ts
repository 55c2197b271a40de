import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { TAKE_READS } from './read-budget.queries';

/**
 * The read budget of one API key, shared by every instance through its row in
 * `provider_read_budget`. Burst plus refill per second add up to
 * PROVIDER_API_READS_PER_SECOND, so no second (sliding or not) sees more reads than
 * that: a burst of a fifth, the rest refilled evenly (a bucket refilled at the full
 * rate with a second's burst let 2x through in one second, and the provider answered 429).
 * Nothing waits for it: a caller takes what is granted and schedules the rest.
 */
@Injectable()
export class ReadBudget {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** Reads that may go at once. */
  private get burst(): number {
    return Math.max(1, Math.floor(this.config.providerApi.readsPerSecond / 5));
  }

  /** Sustained reads per second, after the burst. */
  get perSecond(): number {
    return Math.max(1, this.config.providerApi.readsPerSecond - this.burst);
  }

  /** Takes up to `want` reads for key `keyId` now; resolves with how many were granted. */
  async take(keyId: string, want: number): Promise<number> {
    if (want <= 0) return 0;
    const [row]: { granted: number }[] = await this.dataSource.query(TAKE_READS, [keyId, want, this.perSecond, this.burst]);
    return Number(row.granted);
  }

  /** When the `n`th read past the granted ones (from 1) will have a token, at this key's rate. */
  delayMsFor(n: number): number {
    return Math.ceil((n * 1000) / this.perSecond);
  }
}
