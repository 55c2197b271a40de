import { Inject, Injectable } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { MaintenanceJobScheduler } from './maintenance-job.scheduler';
import { PayloadReencryptionService } from './payload-reencryption.service';

export const REENCRYPTION_INTERVAL_MS = 60_000;

/** Runs the re-encryption job on instances with the `maintenance` role and a key ring. */
@Injectable()
export class PayloadReencryptionScheduler extends MaintenanceJobScheduler {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    job: PayloadReencryptionService,
    scheduler: SchedulerRegistry,
  ) {
    super(
      'payload-reencryption',
      { label: 'payload re-encryption', intervalMs: REENCRYPTION_INTERVAL_MS, firstRunDelayMs: 10_000 },
      job,
      scheduler,
    );
  }

  protected enabled(): boolean {
    return this.config.roles.has('maintenance') && !!this.config.payloadKeys;
  }
}
