// Generated from the admin API's OpenAPI document by `npm run console:api-types`: do not edit.
// A test (src/console-api-types.spec.ts) fails when this file no longer matches the document.

export interface paths {
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics (Bearer METRICS_TOKEN when configured) */
        get: operations["MetricsController_metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/health/live": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process answers */
        get: operations["HealthController_live"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/health/ready": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: database reachable and migrations applied (503 when not) */
        get: operations["HealthController_ready"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inbox": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List inbox events (metadata only), newest first */
        get: operations["AdminInboxController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inbox/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Replay settled events (done, ignored, quarantined) matching a filter; dryRun changes nothing: it counts, and previews the effects of the first 20 */
        post: operations["AdminInboxController_bulkReplay"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inbox/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One inbox event; the payload only for operators */
        get: operations["AdminInboxController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inbox/{id}/timeline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One event's story in order: receipts, processing attempts, the order transition, operations and their delivery attempts, operator actions */
        get: operations["AdminInboxController_timeline"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inbox/{id}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Re-queue one settled event with its identity unchanged */
        post: operations["AdminInboxController_replay"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inbox/{id}/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** What replaying one event would do now: the worker's outcome, the order transition and the outbox operations, computed by its handler in a transaction that is always rolled back (no provider call, no lock kept) */
        post: operations["AdminInboxController_preview"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/inbox/{id}/quarantine": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Stop a pending or processing event */
        post: operations["AdminInboxController_quarantine"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/identity-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** How the inbox keys event identities: by the stated time from `keyedFrom` on, or by id alone */
        get: operations["AdminIdentityKeysController_mode"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/identity-keys/time": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** The contract step of an upgrade: key identities by stated time from a day ahead, and drop the id-only constraint. Only once no instance of an older version runs. */
        post: operations["AdminIdentityKeysController_switchToTime"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/outbox": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List outbox entries (metadata only), newest first */
        get: operations["AdminOutboxController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/outbox/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One outbox entry; the payload only for operators */
        get: operations["AdminOutboxController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/outbox/{id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a dead or unresolved entry again under the same operation key */
        post: operations["AdminOutboxController_retry"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/outbox/{id}/resolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Record an operator's decision on an unresolved or dead entry: delivered (settled; releases the entries of its aggregate held behind it), or retry */
        post: operations["AdminOutboxController_resolve"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/destinations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Each destination's settings, circuit (closed, open, half_open), Retry-After pause and open entries (held among them) */
        get: operations["AdminDestinationsController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/orders/{tenant}/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One order; the customer's email only for operators */
        get: operations["AdminOrdersController_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/orders": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create an order awaiting payment (the shop side of the flow) */
        post: operations["AdminOrdersController_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Audit log of admin changes, newest first */
        get: operations["AdminAuditController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Backlog, oldest pending age, attempts, recurring failures, accept-to-done latency (last hour), rates and open work per endpoint (last 5 minutes), and the worker limits of tenants and endpoints */
        get: operations["AdminStatsController_stats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/series": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Time series for charts over the last 1h (1-minute buckets), 24h (10 minutes) or 7d (1 hour): accepted, done, quarantined per endpoint; delivered and failed attempts per destination; the worst backlog and oldest pending age in each bucket. Rolled up each minute by the maintenance role */
        get: operations["AdminSeriesController_series"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/reconciliation": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Per reconcilable endpoint: cursor, last success, recent runs (events found missing, errors) */
        get: operations["AdminReconciliationController_overview"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/reconciliation/run": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Request a reconciliation run (audited); an instance with the maintenance role executes it */
        post: operations["AdminReconciliationController_run"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/payload-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Stored payloads per key id (null: clear), this instance's key ring, and what re-encryption has left */
        get: operations["AdminPayloadKeysController_keys"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Who this token is: its name, role and tenants if limited (the console signs in with it) */
        get: operations["AdminSessionController_session"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/erasure": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Erase one customer's personal data, by e-mail address or by order: orders' address blanked, e-mail operations' recipient blanked (unsent ones dead), settled events' payloads mentioning them purged, open events' payloads redacted (the address replaced, the work kept); identities and digests kept. Payloads this instance cannot open are listed in `unreadable` (run again once they open). `dryRun: true` changes nothing and answers what would change */
        post: operations["AdminErasureController_erase"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/rejections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The rejected-request log, newest first: time, endpoint, stable reason, client address and sizes of refused webhook requests (sampled: REJECTION_LOG_PER_MINUTE per endpoint; never a header value, a body or a secret) */
        get: operations["AdminRejectionsController_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{endpointId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Receive a provider webhook (Stripe, GitHub, Standard Webhooks, Shopify, Slack, configured senders)
         * @description The raw body is verified with the endpoint secrets (signature, and timestamp where signed). 200 only once the event is durably committed as pending work; a duplicate gets the same 200.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description an id from the endpoints file */
                    endpointId: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": Record<string, never>;
                };
            };
            responses: {
                /** @description `{status: accepted | duplicate | ignored, eventId[, reason]}`, a verified handshake's reply, or the answer a configured sender expects (text/plain, e.g. `[accepted]`) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description a configured sender that expects 204 (Discord) */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description malformed after verification; `{status: "error", reason, message}` */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description missing, invalid or stale signature; `{status: "error", reason, message}` */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description unknown endpoint; `{status: "error", reason, message}` */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description body too large; `{status: "error", reason, message}` */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description database unavailable or commit outcome unknown (Retry-After); `{status: "error", reason, message}` */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Session: {
            name: string;
            /** @enum {string} */
            role: "viewer" | "operator";
            /** @description present when the token is limited to these tenants */
            tenants?: string[];
        };
        InboxEvent: {
            id: string;
            sourceScope: string;
            eventId: string;
            tenantId: string;
            provider: string;
            endpointId: string;
            eventType: string;
            /** @enum {string} */
            status: "pending" | "processing" | "done" | "ignored" | "quarantined";
            statusReason: string | null;
            payloadSha256: string;
            verifiedWith: string;
            attempts: number;
            /** Format: date-time */
            nextAttemptAt: string;
            lockedBy: string | null;
            /** Format: date-time */
            lockedUntil: string | null;
            lastError: string | null;
            /** Format: date-time */
            receivedAt: string;
            /** Format: date-time */
            completedAt: string | null;
            deliveries: number;
            /** Format: date-time */
            lastDeliveryAt: string;
            digestConflicts: number;
            payloadKeyId: string | null;
            payloadPurged: boolean;
            /** @description operators only */
            payload?: unknown;
            payloadUnreadable?: string;
        };
        InboxEventPage: {
            items: components["schemas"]["InboxEvent"][];
            /** @description pass as `cursor` for the next page; null on the last */
            nextCursor: string | null;
        };
        InboxStatusChange: {
            id: string;
            /** @enum {string} */
            before: "pending" | "processing" | "done" | "ignored" | "quarantined";
            /** @enum {string} */
            after: "pending" | "processing" | "done" | "ignored" | "quarantined";
            auditId: string;
        };
        EffectPreview: {
            id: string;
            eventType: string;
            /** @enum {string} */
            status: "pending" | "processing" | "done" | "ignored" | "quarantined";
            /**
             * @description why a replay of it would be refused; null: it would run
             * @enum {string|null}
             */
            replayRefusal: "not_replayable" | "payload_purged" | "source_not_accepted" | "event_type_not_accepted" | "source_facts_missing" | "endpoint_not_configured" | null;
            /**
             * @description the provider read the worker makes first: not needed; previewed with the reading stored at the last processing; or skipped (previewed from the body: the preview never calls a provider)
             * @enum {string}
             */
            confirmRead: "not_needed" | "stored_reading" | "skipped";
            /** @description what the worker would record */
            outcome: {
                /** @enum {string} */
                status: "done" | "ignored" | "quarantined" | "retry";
                reason: string | null;
                handler: string | null;
            };
            transitions: {
                tenantId: string;
                orderId: string;
                from: string;
                to: string;
            }[];
            /** @description outbox entries it would write (an operation key already present is not written again) */
            operations: {
                operationKey: string;
                destination: string;
                operationType: string;
                aggregate: string | null;
            }[];
            /** @description every row it would write, by table */
            writes: {
                [key: string]: {
                    inserted: number;
                    updated: number;
                    deleted: number;
                };
            };
        };
        BulkReplayResult: {
            count: number;
            dryRun: boolean;
            batches: number;
            /** @description by status, then status reason (`none` for none) */
            byStatus: {
                [key: string]: {
                    [key: string]: number;
                };
            };
            /** @description rows left alone because their endpoint refuses them, by refusal */
            refused: {
                source_not_accepted?: number;
                event_type_not_accepted?: number;
                source_facts_missing?: number;
                endpoint_not_configured?: number;
            };
            /** @description dry run: the effect preview of the first 20 events that would run */
            previews?: components["schemas"]["EffectPreview"][];
        };
        OutboxEntry: {
            id: string;
            operationKey: string;
            destination: string;
            operationType: string;
            tenantId: string;
            /** @enum {string} */
            status: "pending" | "delivering" | "delivered" | "unresolved" | "dead";
            attempts: number;
            /** Format: date-time */
            nextAttemptAt: string;
            lockedBy: string | null;
            /** Format: date-time */
            lockedUntil: string | null;
            lastError: string | null;
            lastStatusCode: number | null;
            outcomeUnknown: boolean;
            sourceEventId: string | null;
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            deliveredAt: string | null;
            aggregate: string | null;
            aggregateSeq: number | null;
            /** @description pending behind this earlier entry of its aggregate and destination */
            heldBy: string | null;
            /** @description operators only */
            payload?: unknown;
        };
        OutboxEntryPage: {
            items: components["schemas"]["OutboxEntry"][];
            /** @description pass as `cursor` for the next page; null on the last */
            nextCursor: string | null;
        };
        OutboxStatusChange: {
            id: string;
            /** @enum {string} */
            before: "pending" | "delivering" | "delivered" | "unresolved" | "dead";
            /** @enum {string} */
            after: "pending" | "delivering" | "delivered" | "unresolved" | "dead";
            auditId: string;
        };
        Destination: {
            name: string;
            registered: boolean;
            origin: string | null;
            settings: {
                concurrency: number;
                circuit: {
                    failures: number;
                    cooldownMs: number;
                };
                rateLimit: {
                    perSecond: number;
                    burst: number;
                } | null;
            } | null;
            circuit: {
                /** @enum {string} */
                state: "closed" | "open" | "half_open";
                failures: number;
                /** Format: date-time */
                retryAt: string | null;
                /** Format: date-time */
                probeUntil: string | null;
            };
            /** Format: date-time */
            pausedUntil: string | null;
            paused: boolean;
            lastError: string | null;
            /** Format: date-time */
            changedAt: string | null;
            backlog: {
                pending: number;
                held: number;
                delivering: number;
                unresolved: number;
                dead: number;
            };
        };
        DestinationList: {
            items: components["schemas"]["Destination"][];
        };
        TimelineEntry: {
            /** Format: date-time */
            at: string;
            /** @enum {string} */
            kind: "received" | "redelivered" | "attempt" | "order_transition" | "operation_created" | "delivery_attempt" | "operator_action";
            detail: {
                [key: string]: string | number | boolean | (null);
            };
        };
        Timeline: {
            event: components["schemas"]["InboxEvent"];
            entries: components["schemas"]["TimelineEntry"][];
            operations: components["schemas"]["OutboxEntry"][];
        };
        Order: {
            tenantId: string;
            id: string;
            /** @enum {string} */
            status: "awaiting_payment" | "paid" | "refunded" | "canceled";
            providerPaymentId: string | null;
            totalMinor: number;
            currency: string;
            /** @description operators only */
            customerEmail?: string;
            lastPaymentError: string | null;
            /** Format: date-time */
            createdAt: string;
            /** Format: date-time */
            updatedAt: string;
        };
        AuditRecord: {
            id: string;
            actor: string;
            role: string;
            action: string;
            target: string;
            reason: string;
            beforeStatus: string | null;
            afterStatus: string | null;
            details: {
                [key: string]: unknown;
            } | null;
            /** Format: date-time */
            at: string;
        };
        AuditRecordPage: {
            items: components["schemas"]["AuditRecord"][];
            /** @description pass as `cursor` for the next page; null on the last */
            nextCursor: string | null;
        };
        Rejection: {
            id: string;
            /** Format: date-time */
            at: string;
            endpointId: string;
            tenantId: string;
            provider: string;
            /** @description the stable `reason` the request was answered with */
            reason: string;
            httpStatus: number;
            /** @description the client as the intake budget sees it (INGEST_TRUSTED_PROXIES; IPv6 by its /64) */
            remoteAddress: string;
            /** @description the Content-Length the client declared */
            declaredBytes: number | null;
            /** @description body bytes read before the refusal; null when refused before the end of the body */
            receivedBytes: number | null;
            /** @description this endpoint's rejections since the previous row that the log did not keep (sampling) */
            unloggedBefore: number;
        };
        RejectionPage: {
            items: components["schemas"]["Rejection"][];
            /** @description pass as `cursor` for the next page; null on the last */
            nextCursor: string | null;
        };
        ErasureResult: {
            dryRun: boolean;
            orders: {
                tenantId: string;
                orderId: string;
            }[];
            outboxEntries: number;
            recipientsBlanked: number;
            payloadsPurged: number;
            payloadsRedacted: number;
            unreadable: {
                id: string;
                keyId: string | null;
                reason: string;
            }[];
            complete: boolean;
            auditId: string;
        };
        EndpointStats: {
            endpoint: string;
            pending: number;
            processing: number;
            quarantined: number;
            acceptedPerMinute: number;
        };
        WorkerLimit: {
            /** @enum {string} */
            kind: "tenant" | "endpoint";
            name: string;
            tenantId: string;
            /** @description at most this many of its events processing at once, over every instance */
            concurrency?: number;
            /** @description at most this many of its events started per second, in bursts of up to `burst` */
            perSecond?: number;
            burst?: number;
            /** @description its events processing now, on every instance */
            inFlight: number;
            /** @description its pending events due now (counted up to 100,000) */
            due: number;
            /** @description its rate's events that may start now */
            tokens?: number;
        };
        Stats: {
            /** Format: date-time */
            at: string;
            inbox: {
                byStatus: {
                    [key: string]: number;
                };
                /** @description of the oldest pending event not waiting (0 when none) */
                oldestPendingAgeSeconds: number;
                /** @description pending events that are early and wait for an earlier one (a refund for its payment), without counting attempts */
                waiting: number;
                quarantined: number;
                retrying: number;
                maxAttempts: number;
                recurringFailures: {
                    provider: string;
                    type: string;
                    error: string;
                    count: number;
                }[];
                acceptToDoneSeconds: {
                    /** @enum {string} */
                    window: "1h";
                    completed: number;
                    p50: number | null;
                    p95: number | null;
                    p99: number | null;
                };
            };
            outbox: {
                byStatus: {
                    [key: string]: number;
                };
                oldestPendingAgeSeconds: number;
                unresolved: number;
                dead: number;
                recurringFailures: {
                    destination: string;
                    type: string;
                    error: string;
                    count: number;
                }[];
            };
            rates: {
                windowSeconds: number;
                acceptedPerMinute: number;
                donePerMinute: number;
                deliveredPerMinute: number;
            };
            byEndpoint: components["schemas"]["EndpointStats"][];
            workerLimits: components["schemas"]["WorkerLimit"][];
        };
        SeriesPoint: {
            /** Format: date-time */
            at: string;
            counts: {
                accepted: number;
                done: number;
                quarantined: number;
                delivered: number;
                failed: number;
            };
            backlog: number | null;
            oldestPendingAgeSeconds: number | null;
        };
        Series: {
            /** @enum {string} */
            window: "1h" | "24h" | "7d";
            stepSeconds: number;
            /** Format: date-time */
            from: string;
            /** Format: date-time */
            to: string;
            inbox: components["schemas"]["SeriesPoint"][];
            outbox: components["schemas"]["SeriesPoint"][];
            endpoints: string[];
            destinations: string[];
        };
        ReconciliationRun: {
            id: string;
            endpointId: string;
            requestedBy: string;
            reason: string;
            dryRun: boolean;
            /** Format: date-time */
            windowFrom: string | null;
            /** Format: date-time */
            windowTo: string | null;
            advancesCursor: boolean;
            /** @enum {string} */
            status: "requested" | "running" | "succeeded" | "failed";
            position: string | null;
            listed: number;
            foundMissing: number;
            accepted: number;
            duplicates: number | null;
            ignored: number | null;
            invalid: number | null;
            byReason: {
                [key: string]: number;
            } | null;
            apiCalls: number;
            error: string | null;
            /** Format: date-time */
            requestedAt: string;
            /** Format: date-time */
            startedAt: string | null;
            /** Format: date-time */
            finishedAt: string | null;
        };
        EndpointReconciliation: {
            endpointId: string;
            provider: string;
            scheduled: boolean;
            intervalSeconds: number | null;
            lookbackHours: number;
            /** Format: date-time */
            cursor: string | null;
            /** Format: date-time */
            lastSuccessAt: string | null;
            lastRun: components["schemas"]["ReconciliationRun"] | null;
            recentRuns: components["schemas"]["ReconciliationRun"][];
        };
        ReconciliationOverview: {
            endpoints: components["schemas"]["EndpointReconciliation"][];
        };
        ReconciliationRequested: {
            runs: {
                id: string;
                endpointId: string;
            }[];
            skipped: {
                endpointId: string;
                reason: string;
            }[];
        };
        PayloadKeyReport: {
            encrypted: boolean;
            current: string | null;
            ring: string[];
            keys: {
                keyId: string | null;
                rows: number;
                current: boolean;
                inRing: boolean;
            }[];
            reencryption: {
                remaining: number;
                done: boolean;
            };
        };
        IdentityKeys: {
            keyedFrom: string | null;
            oldConstraint: boolean;
        };
        TimeKeysSwitch: {
            keyedFrom: string;
            switchedAt: string;
            oldConstraintDropped: boolean;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    MetricsController_metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    HealthController_live: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The Health Check is successful */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @example ok */
                        status?: string;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       }
                         *     }
                         */
                        info?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /** @example {} */
                        error?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       }
                         *     }
                         */
                        details?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        };
                    };
                };
            };
            /** @description The Health Check is not successful */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @example error */
                        status?: string;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       }
                         *     }
                         */
                        info?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /**
                         * @example {
                         *       "redis": {
                         *         "status": "down",
                         *         "message": "Could not connect"
                         *       }
                         *     }
                         */
                        error?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       },
                         *       "redis": {
                         *         "status": "down",
                         *         "message": "Could not connect"
                         *       }
                         *     }
                         */
                        details?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        };
                    };
                };
            };
        };
    };
    HealthController_ready: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The Health Check is successful */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @example ok */
                        status?: string;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       }
                         *     }
                         */
                        info?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /** @example {} */
                        error?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       }
                         *     }
                         */
                        details?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        };
                    };
                };
            };
            /** @description The Health Check is not successful */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @example error */
                        status?: string;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       }
                         *     }
                         */
                        info?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /**
                         * @example {
                         *       "redis": {
                         *         "status": "down",
                         *         "message": "Could not connect"
                         *       }
                         *     }
                         */
                        error?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        } | null;
                        /**
                         * @example {
                         *       "database": {
                         *         "status": "up"
                         *       },
                         *       "redis": {
                         *         "status": "down",
                         *         "message": "Could not connect"
                         *       }
                         *     }
                         */
                        details?: {
                            [key: string]: {
                                status: string;
                            } & {
                                [key: string]: unknown;
                            };
                        };
                    };
                };
            };
        };
    };
    AdminInboxController_list: {
        parameters: {
            query?: {
                status?: "pending" | "processing" | "done" | "ignored" | "quarantined";
                provider?: string;
                type?: string;
                tenant?: string;
                endpoint?: string;
                from?: string;
                to?: string;
                limit?: string;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboxEventPage"];
                };
            };
            /** @description `invalid_filter`, `invalid_cursor` or `invalid_limit` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminInboxController_bulkReplay: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    filter: {
                        /** @enum {string} */
                        status?: "done" | "ignored" | "quarantined";
                        provider?: string;
                        type?: string;
                        tenant?: string;
                        endpoint?: string;
                        /** Format: date-time */
                        from?: string;
                        /** Format: date-time */
                        to?: string;
                    };
                    dryRun: boolean;
                    reason: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkReplayResult"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `preview_busy` (dry run): a lock the preview needed is held; retry shortly */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminInboxController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboxEvent"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminInboxController_timeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Timeline"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminInboxController_replay: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboxStatusChange"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `not_replayable` (pending or processing) or `payload_purged` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminInboxController_preview: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EffectPreview"];
                };
            };
            /** @description `invalid_id` or `invalid_body` (the body carries nothing) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `inbox_event_not_found` (also for an event of a tenant outside the token) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `preview_busy`: a lock the preview needed is held (e.g. by a worker); retry shortly */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminInboxController_quarantine: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboxStatusChange"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `not_quarantinable` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminIdentityKeysController_mode: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdentityKeys"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminIdentityKeysController_switchToTime: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TimeKeysSwitch"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminOutboxController_list: {
        parameters: {
            query?: {
                status?: "pending" | "delivering" | "delivered" | "unresolved" | "dead";
                destination?: string;
                tenant?: string;
                from?: string;
                to?: string;
                limit?: string;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutboxEntryPage"];
                };
            };
            /** @description `invalid_filter`, `invalid_cursor` or `invalid_limit` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminOutboxController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutboxEntry"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminOutboxController_retry: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutboxStatusChange"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `not_retryable`, or `recipient_erased` (an erasure blanked it: never sent) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminOutboxController_resolve: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @enum {string} */
                    outcome: "delivered" | "retry";
                    reason: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OutboxStatusChange"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `not_unresolved`, or `recipient_erased` for a retry (an erasure blanked it: never sent) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminDestinationsController_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DestinationList"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminOrdersController_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                tenant: string;
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Order"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `order_not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminOrdersController_create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    tenantId: string;
                    id: string;
                    totalMinor: number;
                    currency: string;
                    /** Format: email */
                    customerEmail: string;
                    providerPaymentId?: string;
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Order"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `order_exists` or `payment_already_bound` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminAuditController_list: {
        parameters: {
            query?: {
                action?: string;
                actor?: string;
                target?: string;
                from?: string;
                to?: string;
                limit?: string;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditRecordPage"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminStatsController_stats: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Stats"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminSeriesController_series: {
        parameters: {
            query?: {
                window?: "1h" | "24h" | "7d";
                endpoint?: string;
                destination?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Series"];
                };
            };
            /** @description `invalid_query` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminReconciliationController_overview: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReconciliationOverview"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminReconciliationController_run: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    endpoint?: string;
                    /** Format: date-time */
                    from?: string;
                    /** Format: date-time */
                    to?: string;
                    /** @default false */
                    dryRun?: boolean;
                    reason: string;
                };
            };
        };
        responses: {
            /** @description OK */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReconciliationRequested"];
                };
            };
            /** @description `reason_required`, `invalid_window`, `window_too_old`, `not_reconcilable`, `invalid_body` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `unknown_endpoint` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminPayloadKeysController_keys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadKeyReport"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminSessionController_session: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Session"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminErasureController_erase: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Format: email */
                    email?: string;
                    tenantId?: string;
                    orderId?: string;
                    reason: string;
                    dryRun?: boolean;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErasureResult"];
                };
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
    AdminRejectionsController_list: {
        parameters: {
            query?: {
                endpoint?: string;
                reason?: string;
                from?: string;
                to?: string;
                limit?: string;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RejectionPage"];
                };
            };
            /** @description `invalid_filter`, `invalid_cursor` or `invalid_limit` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `missing_token` or `invalid_token` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `insufficient_role` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}
