import { Global, Module } from '@nestjs/common';
import { MetricsRegistry } from './metrics.registry';

/**
 * The metrics registry every module registers its recorders in (global). Each
 * recorder lives next to what it measures; /metrics and /health are in monitoring/.
 */
@Global()
@Module({
  providers: [MetricsRegistry],
  exports: [MetricsRegistry],
})
export class ObservabilityModule {}
