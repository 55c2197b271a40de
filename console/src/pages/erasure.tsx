import { useState } from 'preact/hooks';
import type { Api, ErasureResult, ErasureTarget, Session } from '../api';
import { ErrorBanner } from '../ui';

/**
 * Erasure of one customer's personal data, in two steps: a dry run says what would
 * change; only then, for the same customer and with the same reason, the erasure,
 * after an explicit confirmation. Changing the form discards the dry run.
 */
export function Erasure({ api, session }: { api: Api; session: Session }) {
  const [by, setBy] = useState<'email' | 'order'>('email');
  const [fields, setFields] = useState({ email: '', tenantId: '', orderId: '', reason: '' });
  const [preview, setPreview] = useState<ErasureResult>();
  const [result, setResult] = useState<ErasureResult>();
  const [confirmed, setConfirmed] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  if (session.role !== 'operator') {
    return (
      <section>
        <h1>Erasure</h1>
        <p class="muted" data-test="erasure-viewer">
          Erasing personal data needs an operator's token.
        </p>
      </section>
    );
  }
  const target: ErasureTarget =
    by === 'email' ? { email: fields.email.trim() } : { tenantId: fields.tenantId.trim(), orderId: fields.orderId.trim() };
  const ready =
    fields.reason.trim() !== '' &&
    (by === 'email' ? fields.email.trim() !== '' : fields.tenantId.trim() !== '' && fields.orderId.trim() !== '');
  const edit = (patch: Partial<typeof fields>) => {
    setFields({ ...fields, ...patch });
    setPreview(undefined);
    setConfirmed(false);
  };
  const call = async (dryRun: boolean) => {
    setBusy(true);
    setError(undefined);
    try {
      const answer = await api.erase(target, fields.reason.trim(), dryRun);
      if (dryRun) setPreview(answer);
      else {
        setResult(answer);
        setPreview(undefined);
        setConfirmed(false);
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section>
      <h1>Erasure</h1>
      <p class="muted">
        Blanks a customer's address in orders and e-mail operations, purges settled payloads that mention them and redacts open ones; event
        identities and digests stay. Every call, dry runs included, is audited with its reason.
      </p>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (ready) void call(true);
        }}
      >
        <label>
          customer by
          <select
            name="by"
            value={by}
            onChange={(e) => {
              setBy((e.target as HTMLSelectElement).value as 'email' | 'order');
              setPreview(undefined);
              setConfirmed(false);
            }}
          >
            <option value="email">e-mail address</option>
            <option value="order">order</option>
          </select>
        </label>
        {by === 'email' ? (
          <label>
            e-mail
            <input name="email" type="email" value={fields.email} onInput={(e) => edit({ email: (e.target as HTMLInputElement).value })} />
          </label>
        ) : (
          <>
            <label>
              tenant
              <input name="tenantId" value={fields.tenantId} onInput={(e) => edit({ tenantId: (e.target as HTMLInputElement).value })} />
            </label>
            <label>
              order
              <input name="orderId" value={fields.orderId} onInput={(e) => edit({ orderId: (e.target as HTMLInputElement).value })} />
            </label>
          </>
        )}
        <label>
          Reason (recorded in the audit log)
          <input name="reason" value={fields.reason} onInput={(e) => edit({ reason: (e.target as HTMLInputElement).value })} />
        </label>
        <button type="submit" disabled={!ready || busy} data-test="erasure-dry-run">
          Dry run
        </button>
      </form>
      {error !== undefined && <ErrorBanner error={error} />}
      {preview && (
        <div class="card" data-test="erasure-preview">
          <h2>Dry run: what the erasure would change</h2>
          <Counts r={preview} />
          <label class="inline">
            <input
              type="checkbox"
              name="confirm"
              checked={confirmed}
              onChange={(e) => setConfirmed((e.target as HTMLInputElement).checked)}
              data-test="erasure-confirm"
            />
            I have checked this customer and these counts; erase now (it cannot be undone)
          </label>
          <button class="danger" disabled={!confirmed || busy} onClick={() => void call(false)} data-test="erasure-run">
            Erase
          </button>
        </div>
      )}
      {result && (
        <div class="card" data-test="erasure-result" role="status">
          <h2>Erased{result.complete ? '' : ' (incomplete: run again once the unreadable payloads open)'}</h2>
          <Counts r={result} />
          <p class="muted">Audit record {result.auditId}.</p>
        </div>
      )}
    </section>
  );
}

function Counts({ r }: { r: ErasureResult }) {
  return (
    <dl class="facts" data-test="erasure-counts">
      <dt>orders</dt>
      <dd data-test="count-orders">{r.orders.length}</dd>
      <dt>which</dt>
      <dd class="mono">{r.orders.map((o) => `${o.tenantId}/${o.orderId}`).join(', ') || '–'}</dd>
      <dt>outbox entries</dt>
      <dd>{r.outboxEntries}</dd>
      <dt>recipients blanked</dt>
      <dd>{r.recipientsBlanked}</dd>
      <dt>payloads purged</dt>
      <dd>{r.payloadsPurged}</dd>
      <dt>payloads redacted</dt>
      <dd>{r.payloadsRedacted}</dd>
      <dt>unreadable payloads</dt>
      <dd>{r.unreadable.length}</dd>
      <dt>complete</dt>
      <dd>{r.complete ? 'yes' : 'no'}</dd>
    </dl>
  );
}
