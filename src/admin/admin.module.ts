import { Module } from '@nestjs/common';
import { ActivityModule } from '../activity/activity.module';
import { AuditModule } from '../audit/audit.module';
import { InboxModule } from '../inbox/inbox.module';
import { IngestionModule } from '../ingestion/ingestion.module';
import { OrdersModule } from '../orders/orders.module';
import { OutboxModule } from '../outbox/outbox.module';
import { ReconciliationModule } from '../reconciliation/reconciliation.module';
import { TimelineModule } from '../timeline/timeline.module';
import { AdminAuditController } from './admin-audit.controller';
import { AdminAuthGuard } from './admin-auth.guard';
import { AdminDestinationsController } from './admin-destinations.controller';
import { AdminInboxController } from './admin-inbox.controller';
import { AdminIdentityKeysController } from './admin-identity-keys.controller';
import { AdminOrdersController } from './admin-orders.controller';
import { AdminOutboxController } from './admin-outbox.controller';
import { AdminReconciliationController } from './admin-reconciliation.controller';
import { AdminErasureController } from './admin-erasure.controller';
import { AdminPayloadKeysController } from './admin-payload-keys.controller';
import { AdminRejectionsController } from './admin-rejections.controller';
import { AdminSeriesController } from './admin-series.controller';
import { AdminSessionController } from './admin-session.controller';
import { AdminStatsController } from './admin-stats.controller';

/**
 * The operator REST API, its HTTP face only: token auth and roles, one controller per
 * resource, each calling the one service that owns the use case (and its transaction).
 */
@Module({
  imports: [ActivityModule, AuditModule, InboxModule, IngestionModule, OutboxModule, OrdersModule, ReconciliationModule, TimelineModule],
  controllers: [
    AdminInboxController,
    AdminIdentityKeysController,
    AdminOutboxController,
    AdminDestinationsController,
    AdminOrdersController,
    AdminAuditController,
    AdminStatsController,
    AdminSeriesController,
    AdminReconciliationController,
    AdminPayloadKeysController,
    AdminSessionController,
    AdminErasureController,
    AdminRejectionsController,
  ],
  providers: [AdminAuthGuard],
})
export class AdminModule {}
