import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import request from 'supertest';
import { parse } from 'yaml';
import { OutboxRelay } from '../../src/outbox/outbox-relay';
import { useTestAppWithDestinations, TestApp } from '../support/test-app';
import { createOrder, drain, ENDPOINTS, paymentIntentEvent, postStripe } from '../inbox/worker-fixtures';

const ROOT = resolve(__dirname, '../..');
/** Series Prometheus makes itself for every target; the service cannot export them. */
const PROMETHEUS_OWN = new Set(['up']);
const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
]);

interface Rule {
  alert: string;
  expr: string;
  annotations: { runbook_url?: string };
}

const rules: Rule[] = parse(readFileSync(resolve(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')).groups.flatMap(
  (g: { rules: Rule[] }) => g.rules,
);
const dashboard = JSON.parse(readFileSync(resolve(ROOT, 'deploy/grafana/webhook-inbox.json'), 'utf8'));
const dashboardExprs: string[] = [
  ...dashboard.panels.flatMap((p: { targets: { expr: string }[] }) => p.targets.map((t) => t.expr)),
  ...dashboard.templating.list.filter((v: { type: string }) => v.type === 'query').map((v: { query: string }) => v.query),
];

/**
 * The metric names a PromQL expression reads: identifiers that are not functions
 * (followed by a parenthesis), keywords, label names (inside braces or by/without
 * lists), durations or strings. Grafana's label_values(metric, label) reads `metric`.
 */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*\w+\s*\)/g, '$1')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\$\{?\w+\}?/g, '');
  const names = [...stripped.matchAll(/(?<![\w:.])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()/g)].map((m) => m[1]);
  return [...new Set(names.filter((n) => !PROMQL_WORDS.has(n.toLowerCase()) && !/^\d/.test(n)))];
}

/** `# TYPE name kind` of the exposition, a histogram's series under their suffixes. */
function exported(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, kind] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (kind === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    else if (kind === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

describe('metric names: metricNames()', () => {
  it('reads the metrics of an expression and nothing else', () => {
    expect(metricNames('sum by (endpoint) (increase(webhook_requests_total{outcome="accepted"}[1h] offset 1d)) > 10')).toEqual([
      'webhook_requests_total',
    ]);
    expect(metricNames('histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket[5m]))) and on(instance) up == 0')).toEqual([
      'x_seconds_bucket',
      'up',
    ]);
    expect(metricNames('time() - max by (endpoint) (y_timestamp_seconds) > 6 * 3600')).toEqual(['y_timestamp_seconds']);
    expect(metricNames('label_values(outbox_relay_outcomes_total, destination)')).toEqual(['outbox_relay_outcomes_total']);
  });
});

describe('alert rules and the dashboard read only metrics the service exports', () => {
  let t: TestApp;
  useTestAppWithDestinations({ endpoints: ENDPOINTS, env: { ROLES: 'api', WORKER_MAX_ATTEMPTS: '1' } }, (s) => {
    t = s.t;
  });

  it('every metric name in deploy/prometheus/alerts.yml and deploy/grafana/webhook-inbox.json is in /metrics', async () => {
    // Traffic through every stage: accepted, done, quarantined, delivered, rejected.
    await createOrder(t, 'metrics-1', 4200, 'eur');
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'metrics-1', amount: 4200 }));
    await postStripe(t, paymentIntentEvent('payment_intent.succeeded', { orderId: 'no-such-order', amount: 100 }));
    await request(t.url).post(`/webhooks/${ENDPOINTS[0].id}`).set('stripe-signature', 't=1,v1=00').send('{}');
    await drain(t);
    const relay = t.app.get(OutboxRelay);
    while ((await relay.runOnce()) > 0);

    const scrape = await request(t.url).get('/metrics');
    expect(scrape.status).toBe(200);
    const names = exported(scrape.text);
    expect(scrape.text).toMatch(/^webhook_worker_attempts_total\{outcome="quarantined"\} 1$/m);
    expect(scrape.text).toMatch(/^outbox_relay_outcomes_total\{destination="\w+",outcome="delivered"\} \d+$/m);

    const used = [...rules.map((r) => r.expr), ...dashboardExprs].flatMap(metricNames);
    expect(used.length).toBeGreaterThan(20);
    const missing = [...new Set(used)].filter((n) => !names.has(n) && !PROMETHEUS_OWN.has(n));
    expect(missing).toEqual([]);
  }, 60_000);
});

describe('alert rules: runbooks', () => {
  const operations = readFileSync(resolve(ROOT, 'docs/operations.md'), 'utf8');

  it.each(rules.map((r) => [r.alert, r]))('%s links to an anchor that exists in docs/operations.md', (_, rule) => {
    const url = (rule as Rule).annotations.runbook_url ?? '';
    expect(url).toMatch(/^docs\/operations\.md#runbook-[a-z-]+$/);
    expect(operations).toContain(`<a id="${url.split('#')[1]}"></a>`);
  });
});
