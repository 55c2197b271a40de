import { Clock } from '../common/clock';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { APP_CONFIG, EndpointConfig } from '../config/app-config';
import { GithubProvider } from './github/github.provider';
import { HmacProvider } from './hmac/hmac.provider';
import { ProviderRegistry } from '../ingestion/provider.registry';
import { ShopifyProvider } from './shopify/shopify.provider';
import { SlackProvider } from './slack/slack.provider';
import { StandardWebhooksProvider } from './standard/standard.provider';
import { StripeProvider } from './stripe/stripe.provider';

const HMAC_SETTINGS = { signature: { header: 'x-sig' }, eventId: { pointer: '/id' }, eventType: { pointer: '/type' } };

function endpoint(id: string, provider: string, values: string[], settings?: Record<string, unknown>): EndpointConfig {
  return {
    id,
    provider,
    tenantId: 't',
    secrets: values.map((value, i) => ({ label: `s${i}`, value })),
    toleranceSeconds: 300,
    maxBodyBytes: 1024,
    settings,
  };
}

/** Starts the registry as the application does; resolves with its start-up error lines (none: it started). */
async function startupLines(...endpoints: EndpointConfig[]): Promise<string[]> {
  const module = await Test.createTestingModule({
    imports: [DiscoveryModule],
    providers: [
      ProviderRegistry,
      StripeProvider,
      GithubProvider,
      StandardWebhooksProvider,
      ShopifyProvider,
      SlackProvider,
      HmacProvider,
      Clock,
      { provide: APP_CONFIG, useValue: { endpoints: new Map(endpoints.map((e) => [e.id, e])) } },
    ],
  }).compile();
  const failure = await module.init().then(
    () => undefined,
    (error: Error) => error,
  );
  await module.close().catch(() => undefined);
  return failure ? failure.message.split('\n') : [];
}

const b64 = (bytes: number) => Buffer.alloc(bytes, 7).toString('base64');
const text = (chars: number) => 'k'.repeat(chars);

describe('ProviderRegistry: a secret too short to resist guessing stops the start', () => {
  it('refuses, for every provider, a secret equal to its prefix or under 16 bytes of key material, one line each, never the secret', async () => {
    const lines = await startupLines(
      endpoint('stripe-bare', 'stripe', ['whsec_']),
      endpoint('stripe-short', 'stripe', [`whsec_${text(15)}`]),
      endpoint('standard-bare', 'standard', ['whsec_']),
      endpoint('standard-short', 'standard', [`whsec_${b64(15)}`]),
      endpoint('standard-text', 'standard', [`whsec_${text(15)}!`]),
      endpoint('github-short', 'github', [text(15)]),
      endpoint('shopify-short', 'shopify', [`shpss_${text(15)}`]),
      endpoint('slack-short', 'slack', [text(15)]),
      endpoint('hmac-prefix', 'hmac', ['whsec_'], { ...HMAC_SETTINGS, secret: { prefix: 'whsec_' } }),
      endpoint('hmac-hex', 'hmac', ['00ff'.repeat(7)], { ...HMAC_SETTINGS, secret: { encoding: 'hex' } }),
      // Rotation: the old secret of the list is checked too, and named by its label.
      endpoint('github-rotation', 'github', [text(16), text(3)]),
    );
    expect(lines).toEqual([
      'WEBHOOK_ENDPOINTS_FILE: endpoint "stripe-bare": secrets "s0": the text after "whsec_" must be at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "stripe-short": secrets "s0": the text after "whsec_" must be at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "standard-bare": secrets "s0": the base64 after "whsec_" must decode to at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "standard-short": secrets "s0": the base64 after "whsec_" must decode to at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "standard-text": secrets "s0": not base64 after "whsec_"',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "github-short": secrets "s0": the text must be at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "shopify-short": secrets "s0": the text after "shpss_" must be at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "slack-short": secrets "s0": the text must be at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "hmac-prefix": secrets "s0": the text after "whsec_" must be at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "hmac-hex": secrets "s0": the hex must decode to at least 16 bytes',
      'WEBHOOK_ENDPOINTS_FILE: endpoint "github-rotation": secrets "s1": the text must be at least 16 bytes',
    ]);
    expect(lines.join('\n')).not.toMatch(/kkk|BwcH|00ff/);
  });

  it('starts with the secrets the providers issue, and 16 bytes of key material at the least', async () => {
    expect(
      await startupLines(
        endpoint('stripe', 'stripe', [`whsec_${text(32)}`, `whsec_${text(16)}`]),
        endpoint('standard', 'standard', [`whsec_${b64(24)}`, b64(16)]),
        endpoint('github', 'github', [text(16)]),
        endpoint('shopify', 'shopify', ['0123456789abcdef'.repeat(2), `shpss_${'0123456789abcdef'.repeat(2)}`]),
        endpoint('slack', 'slack', ['0123456789abcdef'.repeat(2)]),
        endpoint('hmac', 'hmac', [`whsec_${b64(16)}`], { ...HMAC_SETTINGS, secret: { encoding: 'base64', prefix: 'whsec_' } }),
      ),
    ).toEqual([]);
  });
});
