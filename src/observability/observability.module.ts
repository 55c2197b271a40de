import { Global, Module } from '@nestjs/common';
import { IngestionMetrics } from './ingestion.metrics';
import { MetricsRegistry } from './metrics.registry';
import { RelayMetrics } from './relay.metrics';
import { RetentionMetrics } from './retention.metrics';
import { AcceptToDoneMetrics, WorkerMetrics } from './worker.metrics';

/** Metric recorders every module may inject (global); the endpoints live in MonitoringModule. */
@Global()
@Module({
  providers: [MetricsRegistry, IngestionMetrics, WorkerMetrics, AcceptToDoneMetrics, RelayMetrics, RetentionMetrics],
  exports: [MetricsRegistry, IngestionMetrics, WorkerMetrics, AcceptToDoneMetrics, RelayMetrics, RetentionMetrics],
})
export class ObservabilityModule {}
