import { ConfigError } from './config.error';

export interface DatabaseHost {
  /** A name, an IPv4 address or a bracketed IPv6 address, as in the URL. */
  host: string;
  port: number;
}

/**
 * libpq's values that make sense for a service that writes: `read-write` (SHOW transaction_read_only
 * is off, as libpq checks it) or `primary` (not in recovery); `any` takes the first server that answers.
 */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary';

export interface DatabaseTarget {
  hosts: DatabaseHost[];
  targetSessionAttrs: TargetSessionAttrs;
  /** Whether sessions need the host search (database/multi-host-client.ts) rather than pg's one host. */
  multiHost: boolean;
  /** The URL pg is given for one host: the same credentials, database and parameters. */
  urlFor(host: DatabaseHost): string;
}

const AUTHORITY = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/s;
const SUPPORTED: readonly string[] = ['any', 'read-write', 'primary'];

/**
 * DATABASE_URL in libpq's syntax, several hosts included
 * (`postgres://user@host1:5432,host2:5433/db?target_session_attrs=read-write`), which neither
 * WHATWG URL nor pg parses. Messages name the problem, never the URL (it may hold a password).
 */
export function parseDatabaseUrl(raw: string): DatabaseTarget {
  const match = AUTHORITY.exec(raw.trim());
  if (!match) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw.trim())) throw new ConfigError('DATABASE_URL: expected a postgres or postgresql URL');
    throw new ConfigError('DATABASE_URL: not a valid URL');
  }
  const [, scheme, authority, rest] = match;
  const at = authority.lastIndexOf('@');
  const userinfo = at < 0 ? '' : authority.slice(0, at + 1);
  const hostList = authority.slice(at + 1);
  const path = rest.replace(/\/+$/, '');

  const query = new URLSearchParams(path.includes('?') ? path.slice(path.indexOf('?') + 1) : '');
  const attrs = query.get('target_session_attrs');
  query.delete('target_session_attrs');
  const pathWithoutAttrs = `${path.split('?')[0]}${query.size ? `?${query}` : ''}`;

  const entries = hostList.split(',');
  const several = entries.length > 1;
  if (attrs !== null && !SUPPORTED.includes(attrs)) {
    throw new ConfigError(`DATABASE_URL: target_session_attrs "${attrs}" is not supported (read-write or primary: the service writes)`);
  }
  if (several && attrs === 'any') {
    // The first server that answers may be a standby: every write would fail there, for good.
    throw new ConfigError(
      'DATABASE_URL: target_session_attrs=any with several hosts would write to whichever answers first; use read-write or primary',
    );
  }
  if (several && entries.some((e) => e === '')) throw new ConfigError('DATABASE_URL: an empty host in the host list');

  const hosts = entries.map((entry) => {
    let parsed: URL;
    try {
      parsed = new URL(`${scheme}${entry}/`);
    } catch {
      throw new ConfigError('DATABASE_URL: not a valid URL');
    }
    // An IPv6 address without its URL brackets: the socket is given the host as it is.
    return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port: parsed.port === '' ? 5432 : Number(parsed.port) };
  });
  const urlFor = (h: DatabaseHost): string =>
    `${scheme}${userinfo}${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}${pathWithoutAttrs}`;
  if (!several && attrs === null) {
    // One host as today: pg is given the URL exactly as configured.
    try {
      new URL(raw);
    } catch {
      throw new ConfigError('DATABASE_URL: not a valid URL');
    }
    return { hosts, targetSessionAttrs: 'any', multiHost: false, urlFor: () => raw.replace(/\/+$/, '') };
  }
  for (const h of hosts) {
    try {
      new URL(urlFor(h));
    } catch {
      throw new ConfigError('DATABASE_URL: not a valid URL');
    }
  }
  const targetSessionAttrs = (attrs ?? 'read-write') as TargetSessionAttrs;
  return { hosts, targetSessionAttrs, multiHost: true, urlFor };
}
