import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { InboxModule } from '../inbox/inbox.module';
import { OrdersModule } from '../orders/orders.module';
import { OutboxModule } from '../outbox/outbox.module';
import { AdminAuditController } from './admin-audit.controller';
import { AdminAuthGuard } from './admin-auth.guard';
import { AdminInboxController } from './admin-inbox.controller';
import { AdminInboxService } from './admin-inbox.service';
import { AdminOrdersController } from './admin-orders.controller';
import { AdminOrdersService } from './admin-orders.service';
import { AdminOutboxController } from './admin-outbox.controller';
import { AdminOutboxService } from './admin-outbox.service';
import { AdminStatsController } from './admin-stats.controller';

/** Operator REST API: token auth and roles, one controller per resource, audit in the change's transaction. */
@Module({
  imports: [AuditModule, InboxModule, OutboxModule, OrdersModule],
  controllers: [AdminInboxController, AdminOutboxController, AdminOrdersController, AdminAuditController, AdminStatsController],
  providers: [AdminAuthGuard, AdminInboxService, AdminOutboxService, AdminOrdersService],
})
export class AdminModule {}
