import { Global, Module } from '@nestjs/common';
import { IngestionMetrics } from './ingestion.metrics';
import { MetricsRegistry } from './metrics.registry';

@Global()
@Module({
  providers: [MetricsRegistry, IngestionMetrics],
  exports: [MetricsRegistry, IngestionMetrics],
})
export class ObservabilityModule {}
