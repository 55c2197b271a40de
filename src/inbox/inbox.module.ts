import { Module } from '@nestjs/common';
import { InboxRepository } from './inbox.repository';
import { InboxService } from './inbox.service';

@Module({
  providers: [InboxRepository, InboxService],
  exports: [InboxService],
})
export class InboxModule {}
