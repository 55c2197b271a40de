/**
 * Hash routes (`#/inbox/42`): the service serves one index.html and never needs
 * to know the console's paths, and a reload keeps the page.
 */

export type Route =
  | { page: 'overview' }
  | { page: 'inbox'; query: Record<string, string> }
  | { page: 'event'; id: string }
  | { page: 'outbox'; query: Record<string, string> }
  | { page: 'orders'; query: Record<string, string> }
  | { page: 'audit'; query: Record<string, string> }
  | { page: 'rejections'; query: Record<string, string> }
  | { page: 'destinations' }
  | { page: 'destination'; name: string }
  | { page: 'reconciliation' }
  | { page: 'erasure' }
  | { page: 'not_found'; path: string };

/** The pages that show a cursor-paged list. */
export type ListPage = 'inbox' | 'outbox' | 'audit' | 'rejections';

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/';
  const [path, search = ''] = raw.split('?', 2);
  const query = Object.fromEntries(new URLSearchParams(search));
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: 'overview' };
  const [first, second] = parts;
  if (
    parts.length === 1 &&
    (first === 'inbox' || first === 'outbox' || first === 'orders' || first === 'audit' || first === 'rejections')
  ) {
    return { page: first, query };
  }
  if (parts.length === 2 && first === 'inbox' && /^\d{1,19}$/.test(second)) return { page: 'event', id: second };
  if (parts.length === 1 && (first === 'destinations' || first === 'reconciliation' || first === 'erasure')) return { page: first };
  if (parts.length === 2 && first === 'destinations') return { page: 'destination', name: second };
  return { page: 'not_found', path };
}

export function href(route: Route): string {
  switch (route.page) {
    case 'overview':
      return '#/';
    case 'event':
      return `#/inbox/${encodeURIComponent(route.id)}`;
    case 'destinations':
    case 'reconciliation':
    case 'erasure':
      return `#/${route.page}`;
    case 'destination':
      return `#/destinations/${encodeURIComponent(route.name)}`;
    case 'not_found':
      return `#${route.path}`;
    default: {
      const entries = Object.entries(route.query).filter(([, v]) => v !== '' && v !== undefined);
      const search = new URLSearchParams(entries).toString();
      return `#/${route.page}${search ? `?${search}` : ''}`;
    }
  }
}
