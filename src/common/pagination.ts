/**
 * Keyset pagination shared by the admin lists: newest first on (timestamp, id).
 * The timestamp travels as epoch microseconds (a decimal string) so a page
 * boundary is exact; a JS Date would lose the microseconds PostgreSQL keeps.
 */
export interface PageKey {
  atUs: string;
  id: string;
}

export interface PageRequest {
  /** Start after this row (exclusive); undefined: the newest rows. */
  after?: PageKey;
  limit: number;
}

export interface Page<T> {
  items: T[];
  /** Key of the last item when more rows follow. */
  next?: PageKey;
}

/** Collects WHERE fragments; `?` in a fragment becomes the next `$n` placeholder. */
export class SqlWhere {
  readonly params: unknown[] = [];
  private readonly clauses: string[] = [];

  add(fragment: string, ...values: unknown[]): this {
    let i = 0;
    this.clauses.push(
      fragment.replace(/\?/g, () => {
        this.params.push(values[i++]);
        return `$${this.params.length}`;
      }),
    );
    return this;
  }

  /** Adds a parameter without a clause (e.g. LIMIT) and returns its placeholder. */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  /** Keyset condition for a descending (column, id) order. */
  before(column: string, key: PageKey | undefined, idColumn = 'id'): this {
    if (key) {
      this.add(`(${column}, ${idColumn}) < (timestamptz 'epoch' + ?::bigint * interval '1 microsecond', ?::bigint)`, key.atUs, key.id);
    }
    return this;
  }

  sql(): string {
    return this.clauses.length ? `WHERE ${this.clauses.join(' AND ')}` : '';
  }
}

/** SQL expression of a timestamp column as epoch microseconds (text), for PageKey.atUs. */
export function microsExpr(column: string): string {
  return `(floor(extract(epoch from ${column}) * 1000000))::bigint::text`;
}

/** What runs a query: a DataSource or a UnitOfWork. */
export interface Queryable {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

export interface PageQuery {
  /** The select list (page_at_us is added). */
  columns: string;
  table: string;
  /** The timestamp the list is ordered by, newest first, with `id` as the tie-break. */
  orderBy: string;
  /** The filter; the page's keyset condition and LIMIT are added to it. */
  where: SqlWhere;
}

/** One page of an admin list: `limit + 1` rows fetched, so the page knows whether more follow. */
export async function queryPage<R extends { page_at_us: string; id: string | number }, T>(
  db: Queryable,
  query: PageQuery,
  page: PageRequest,
  map: (row: R) => T,
): Promise<Page<T>> {
  const { columns, table, orderBy, where } = query;
  where.before(orderBy, page.after);
  const limit = where.param(page.limit + 1);
  const rows = (await db.query(
    `SELECT ${columns}, ${microsExpr(orderBy)} AS page_at_us FROM ${table} ${where.sql()} ORDER BY ${orderBy} DESC, id DESC LIMIT ${limit}`,
    where.params,
  )) as R[];
  return toPage(rows, page.limit, map);
}

/** Turns `limit + 1` fetched rows into a page. */
export function toPage<R extends { page_at_us: string; id: string | number }, T>(rows: R[], limit: number, map: (row: R) => T): Page<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return { items: kept.map(map), next: more && last ? { atUs: last.page_at_us, id: String(last.id) } : undefined };
}
