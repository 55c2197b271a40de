import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { Clock } from './common/clock';
import { CommonModule } from './common/common.module';
import { DatabaseModule } from './database/database.module';
import { CryptoModule } from './crypto/crypto.module';
import { ActivityModule } from './activity/activity.module';
import { AdminModule } from './admin/admin.module';
import { InboxModule } from './inbox/inbox.module';
import { IngestionModule } from './ingestion/ingestion.module';
import { OrdersModule } from './orders/orders.module';
import { OutboxModule } from './outbox/outbox.module';
import { ProvidersModule } from './providers/providers.module';
import { RetentionModule } from './retention/retention.module';
import { ReconciliationModule } from './reconciliation/reconciliation.module';
import { ObservabilityModule } from './observability/observability.module';
import { MonitoringModule } from './monitoring/monitoring.module';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { TracingModule } from './tracing/tracing.module';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, clock?: Clock, spanExporter?: SpanExporter): DynamicModule {
    // Without `api` the webhook route and the admin API do not exist at all (404), not merely
    // refuse: a worker-only instance often sits outside the load balancer and its WAF.
    const api = config.roles.has('api') ? [IngestionModule, AdminModule] : [];
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        ScheduleModule.forRoot(),
        CommonModule.forRoot(clock),
        TracingModule.forRoot(spanExporter),
        DatabaseModule,
        CryptoModule,
        ObservabilityModule,
        InboxModule,
        OrdersModule,
        OutboxModule,
        ReconciliationModule,
        ProvidersModule,
        RetentionModule,
        ActivityModule,
        MonitoringModule,
        ...api,
      ],
    };
  }
}
