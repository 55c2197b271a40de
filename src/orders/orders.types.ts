import { OrderStatus } from './domain/order-state-machine';

export interface Order {
  tenantId: string;
  id: string;
  status: OrderStatus;
  providerPaymentId: string | null;
  totalMinor: number;
  currency: string;
  customerEmail: string;
  lastPaymentError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface CreateOrder {
  tenantId: string;
  id: string;
  totalMinor: number;
  currency: string;
  customerEmail: string;
  providerPaymentId?: string | null;
}
