import { Module } from '@nestjs/common';
import { AuditService } from './audit.service';

/** The audit log of operator actions: a leaf the modules that own those actions write to. */
@Module({
  providers: [AuditService],
  exports: [AuditService],
})
export class AuditModule {}
