import { Module } from '@nestjs/common';
import { InboxModule } from '../inbox/inbox.module';
import { OutboxModule } from '../outbox/outbox.module';
import { ActivityRollupScheduler } from './activity-rollup.scheduler';
import { ActivityRepository } from './activity.repository';
import { ActivityService } from './activity.service';

/** Activity per minute for the console's charts: rolled up by the maintenance role, read by the admin API. */
@Module({
  imports: [InboxModule, OutboxModule],
  providers: [ActivityRepository, ActivityService, ActivityRollupScheduler],
  exports: [ActivityService],
})
export class ActivityModule {}
