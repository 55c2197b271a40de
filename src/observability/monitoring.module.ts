import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { InboxModule } from '../inbox/inbox.module';
import { OutboxModule } from '../outbox/outbox.module';
import { BacklogMetrics } from './backlog.metrics';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/**
 * The operations endpoints: /metrics and /health. Separate from the global
 * ObservabilityModule (metric recorders) because it reads the inbox and outbox services.
 */
@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' }), InboxModule, OutboxModule],
  controllers: [MetricsController, HealthController],
  providers: [BacklogMetrics],
})
export class MonitoringModule {}
