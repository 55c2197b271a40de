import { EndpointConfig } from '../../config/app-config';
import { GithubApi, githubErrorOf, rateLimitWaitMs } from './github-api';
import { ReconcileContext, Reconciler, ReconcilerFor, ReconcileWindow } from '../../reconciliation/reconciler';
import { githubNamespace, uuidV1Time } from './github.provider';
import { ProviderAnswerError } from '../../provider-api/provider-api.errors';

interface Delivery {
  id: number;
  guid: string;
  delivered_at: string;
  redelivery: boolean;
  status_code: number;
  event: string;
}

const PAGE = 100;

/**
 * Our endpoint's answers about a request's content (bad JSON or input, too large, unsupported
 * type): a redelivery sends the same bytes and gets the same answer. A delivery whose redelivery
 * got one is not asked for again; asked every run (288 a day) for the three days GitHub keeps
 * it, each would spend an API call and a webhook a run. A 401 (a secret being rotated or fixed),
 * a 404, a 429, a 5xx or a timeout can pass later: those are asked for on every run.
 */
const REJECTED_FOR_ITS_CONTENT = new Set([400, 413, 415, 422]);

/**
 * GitHub keeps a hook's recent deliveries (about three days) but no event store:
 * list them newest first, and for each failed delivery whose X-GitHub-Delivery is
 * not in the inbox, ask GitHub to redeliver it. The redelivery comes back signed
 * through the normal route with the same delivery id, so the inbox dedups it like
 * any retry, unless our endpoint refused an earlier redelivery for its content
 * (REJECTED_FOR_ITS_CONTENT). GitHub's rate-limit headers are honoured between calls.
 */
@ReconcilerFor('github')
export class GithubReconciler implements Reconciler {
  constructor(private readonly api: GithubApi) {}

  refuse(endpoint: EndpointConfig): string | undefined {
    const api = endpoint.api!;
    if (endpoint.expect?.hookId === undefined) return 'GitHub reconciliation needs expect.hookId (the hook whose deliveries are listed)';
    if (api.org ? api.owner || api.repo : !(api.owner && api.repo))
      return 'GitHub reconciliation needs api.owner and api.repo, or api.org (not both)';
    return undefined;
  }

  async run(endpoint: EndpointConfig, window: ReconcileWindow, context: ReconcileContext): Promise<void> {
    const octokit = this.api.client(endpoint);
    const api = endpoint.api!;
    const hookId = Number(endpoint.expect!.hookId);
    const namespace = githubNamespace(endpoint, String(hookId));
    const base = api.org
      ? `/orgs/${encodeURIComponent(api.org)}`
      : `/repos/${encodeURIComponent(api.owner!)}/${encodeURIComponent(api.repo!)}`;
    const asked = new Set<string>();
    let cursor = window.position;
    for (;;) {
      const page = await context.call(() =>
        octokit
          .request(`GET ${base}/hooks/{hook_id}/deliveries`, {
            hook_id: hookId,
            per_page: PAGE,
            ...(cursor && { cursor }),
            request: this.api.deadline(),
          })
          .catch((error: unknown) => {
            throw githubErrorOf(error);
          }),
      );
      const deliveries = (page.data as Delivery[]).filter((d) => new Date(d.delivered_at) < window.to);
      const inWindow = deliveries.filter((d) => new Date(d.delivered_at) >= window.from);
      const failed = inWindow.filter((d) => (d.status_code < 200 || d.status_code > 299) && !asked.has(d.guid));
      const present = await context.inInbox(
        namespace,
        failed.map((d) => ({ eventId: d.guid, occurredAt: uuidV1Time(d.guid) })),
      );
      let redelivered = 0;
      const outcomes: Record<string, number> = {};
      for (const [i, delivery] of failed.entries()) {
        if (present[i] || asked.has(delivery.guid)) continue;
        asked.add(delivery.guid);
        // Newest first: this is the delivery's latest attempt, and it was already a redelivery.
        if (delivery.redelivery && REJECTED_FOR_ITS_CONTENT.has(delivery.status_code)) {
          const key = `refused:rejected_again_${delivery.status_code}`;
          outcomes[key] = (outcomes[key] ?? 0) + 1;
          continue;
        }
        // A dry run counts what it would ask for: a redelivery arrives as a webhook and is processed.
        if (context.dryRun) {
          redelivered++;
          continue;
        }
        await context.wait(rateLimitWaitMs(page.headers as Record<string, unknown>));
        try {
          await context.call(() =>
            octokit
              .request(`POST ${base}/hooks/{hook_id}/deliveries/{delivery_id}/attempts`, {
                hook_id: hookId,
                delivery_id: delivery.id,
                request: this.api.deadline(),
              })
              .catch((error: unknown) => {
                throw githubErrorOf(error);
              }),
          );
          redelivered++;
        } catch (error) {
          // GitHub will not send this one again (a 4xx answer about it, not an outage): counted, and
          // the run goes on to the others; failing the run would stop at it on every run.
          if (!(error instanceof ProviderAnswerError)) throw error;
          const key = `refused:redelivery_refused_${error.status ?? 'unknown'}`;
          outcomes[key] = (outcomes[key] ?? 0) + 1;
        }
      }
      const next = nextCursor(page.headers.link);
      // Newest first: past the window's start, or at the end, the run is done.
      const done = !next || inWindow.length < deliveries.length || page.data.length === 0;
      await context.redelivered(redelivered, inWindow.length, next ?? cursor ?? '', outcomes);
      if (done) return;
      cursor = next;
      await context.wait(rateLimitWaitMs(page.headers as Record<string, unknown>));
    }
  }
}

/** GitHub pages deliveries by a `cursor` in the Link header's rel="next" URL. */
function nextCursor(link: string | undefined): string | undefined {
  const next = link?.split(',').find((part) => /rel="next"/.test(part));
  const url = next && /<([^>]+)>/.exec(next)?.[1];
  return url ? (new URL(url).searchParams.get('cursor') ?? undefined) : undefined;
}
