import { Inject, Injectable } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { MaintenanceJobScheduler } from './maintenance-job.scheduler';
import { RetentionService } from './retention.service';

/** Retention is not urgent: once a minute, and once soon after start (not during boot). */
export const RETENTION_INTERVAL_MS = 60_000;

/** Runs the retention job, only on instances with the `maintenance` role. */
@Injectable()
export class RetentionScheduler extends MaintenanceJobScheduler {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    retention: RetentionService,
    scheduler: SchedulerRegistry,
  ) {
    super('retention', { label: 'retention', intervalMs: RETENTION_INTERVAL_MS, firstRunDelayMs: 5_000 }, retention, scheduler);
  }

  protected enabled(): boolean {
    return this.config.roles.has('maintenance');
  }
}
