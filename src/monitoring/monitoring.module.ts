import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { InboxModule } from '../inbox/inbox.module';
import { OutboxModule } from '../outbox/outbox.module';
import { BacklogMetrics } from './backlog.metrics';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/**
 * The operations endpoints: /metrics (with the backlog gauges, read from the
 * inbox and outbox at scrape time) and /health. It sits on top of the modules it reads.
 */
@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' }), InboxModule, OutboxModule],
  controllers: [MetricsController, HealthController],
  providers: [BacklogMetrics],
})
export class MonitoringModule {}
