import { Inject, Injectable } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { MaintenanceJobScheduler } from '../retention/maintenance-job.scheduler';
import { ActivityService } from './activity.service';

/** A chart's finest bucket is a minute. */
export const ROLLUP_INTERVAL_MS = 60_000;

/** Rolls activity up once a minute, only on instances with the `maintenance` role. */
@Injectable()
export class ActivityRollupScheduler extends MaintenanceJobScheduler {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    activity: ActivityService,
    scheduler: SchedulerRegistry,
  ) {
    super('activity-rollup', { label: 'activity rollup', intervalMs: ROLLUP_INTERVAL_MS, firstRunDelayMs: 3_000 }, activity, scheduler);
  }

  protected enabled(): boolean {
    return this.config.roles.has('maintenance');
  }
}
