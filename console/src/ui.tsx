import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { describeError } from './api';
import { href, ListPage } from './router';

/** Loads data for a page; `reload` runs it again (after an action). Errors keep the API's reason. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function ErrorBanner({ error }: { error: unknown }) {
  const { reason, message } = describeError(error);
  return (
    <div class="error" role="alert" data-test="error">
      <strong class="reason">{reason}</strong> <span>{message}</span>
    </div>
  );
}

export function Status({ value }: { value: string }) {
  return <span class={`status status-${value}`}>{value}</span>;
}

export function Loading() {
  return <p class="muted">Loading…</p>;
}

/**
 * An operator action that needs a reason (the API requires one and audits it):
 * the button opens a small form; nothing is sent without a reason.
 */
export function ActionWithReason(props: {
  label: string;
  test: string;
  run: (reason: string) => Promise<unknown>;
  done: (result: unknown) => void;
  danger?: boolean;
  children?: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  if (!open) {
    return (
      <button class={props.danger ? 'danger' : ''} data-test={props.test} onClick={() => setOpen(true)}>
        {props.label}
      </button>
    );
  }
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const result = await props.run(reason.trim());
      setOpen(false);
      setReason('');
      props.done(result);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="action-form" onSubmit={submit} data-test={`${props.test}-form`}>
      {props.children}
      <label>
        Reason (recorded in the audit log)
        <input name="reason" required value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit" disabled={busy || reason.trim() === ''} data-test={`${props.test}-confirm`}>
        {props.label}
      </button>
      <button type="button" class="secondary" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error !== undefined && <ErrorBanner error={error} />}
    </form>
  );
}

/** First and next page of a cursor-paged list: the filter stays, the cursor moves. */
export function Pager({
  page,
  filter,
  cursor,
  next,
  go,
}: {
  page: ListPage;
  filter: Record<string, string>;
  cursor: string | undefined;
  next: string | null;
  go: (hash: string) => void;
}) {
  return (
    <div class="pager">
      <button class="secondary" disabled={!cursor} onClick={() => go(href({ page, query: filter }))}>
        First page
      </button>
      <button
        class="secondary"
        disabled={!next}
        onClick={() => next && go(href({ page, query: { ...filter, cursor: next } }))}
        data-test="next-page"
      >
        Next page
      </button>
    </div>
  );
}

/** The one row of a list that matched nothing. */
export function EmptyRow({ columns, children }: { columns: number; children: ComponentChildren }) {
  return (
    <tr>
      <td colSpan={columns} class="muted">
        {children}
      </td>
    </tr>
  );
}
