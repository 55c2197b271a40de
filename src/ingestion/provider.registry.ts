import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { Clock } from '../common/clock';
import { discoverNamed } from '../common/discovery';
import { APP_CONFIG, AppConfig, EndpointConfig } from '../config/app-config';
import { ConfigError } from '../config/config.error';
import { secretProblem } from './secret-form';
import { WEBHOOK_PROVIDER_NAME, WebhookProvider } from './webhook-provider';

/** Finds every @WebhookProviderFor class at start and checks the endpoints file names only known ones. */
@Injectable()
export class ProviderRegistry implements OnModuleInit {
  private readonly logger = new Logger(ProviderRegistry.name);
  private providers = new Map<string, WebhookProvider>();

  constructor(
    private readonly discovery: DiscoveryService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.providers = discoverNamed(
      this.discovery,
      WEBHOOK_PROVIDER_NAME,
      (name) => new ConfigError(`webhook provider "${name}" is registered twice`),
    );
    const problems = [...this.config.endpoints.values()].flatMap((endpoint) =>
      this.problems(endpoint).map((problem) => `WEBHOOK_ENDPOINTS_FILE: endpoint "${endpoint.id}": ${problem}`),
    );
    // One line per mistake, so a file with several is fixed in one round.
    if (problems.length > 0) throw new ConfigError(problems.join('\n'));
    this.warnOfExpiredSecrets();
  }

  /**
   * An endpoint whose every secret is past its notAfter (a rotation's old secret left alone, a
   * notAfter on the wrong entry) verifies no webhook and answers each one 401. Said at start, as
   * an error, but not refused: the date passes on its own, and a restart after it must not take
   * every other endpoint down with this one.
   */
  private warnOfExpiredSecrets(): void {
    const now = this.clock.now();
    for (const endpoint of this.config.endpoints.values()) {
      if (endpoint.secrets.length > 0 && endpoint.secrets.every((s) => s.notAfter !== undefined && s.notAfter <= now)) {
        this.logger.error(
          { endpointId: endpoint.id },
          'every secret of this endpoint is past its notAfter: it verifies no webhook (add the current secret)',
        );
      }
    }
  }

  private problems(endpoint: EndpointConfig): string[] {
    const provider = this.providers.get(endpoint.provider);
    if (!provider) return [`unknown provider "${endpoint.provider}" (known: ${[...this.providers.keys()].join(', ')})`];
    const problems = provider.configure ? provider.configure(endpoint) : this.settingsProblems(provider, endpoint);
    if (problems.length > 0) return problems;
    if (endpoint.secrets.length === 0 && !provider.keyless?.(endpoint)) return ['secrets: at least one is needed'];
    const form = provider.secretForm(endpoint);
    // Rotation lists included: every secret of the file could verify until its notAfter.
    return endpoint.secrets.flatMap((secret) => {
      const problem = secretProblem(secret.value, form);
      return problem ? [`secrets "${secret.label}": ${problem}`] : [];
    });
  }

  private settingsProblems(provider: WebhookProvider, endpoint: EndpointConfig): string[] {
    if (endpoint.settings) return [`settings: provider "${endpoint.provider}" takes no settings`];
    // A typo here would silently ignore every event of the endpoint: refuse to start instead.
    const problems: string[] = [];
    for (const [key, value] of Object.entries(endpoint.expect ?? {})) {
      const type = provider.expects[key];
      const known = Object.keys(provider.expects).join(', ') || 'none';
      if (!type) problems.push(`expect.${key} is not known to ${endpoint.provider} (known: ${known})`);
      else if (type === 'boolean' ? typeof value !== 'boolean' : typeof value === 'boolean')
        problems.push(`expect.${key} must be a ${type}`);
    }
    return problems;
  }

  get(name: string): WebhookProvider {
    const provider = this.providers.get(name);
    if (!provider) throw new Error(`no webhook provider "${name}"`);
    return provider;
  }
}
