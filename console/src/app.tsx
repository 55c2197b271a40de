import { useEffect, useMemo, useState } from 'preact/hooks';
import { Api, ApiError, describeError, Session } from './api';
import { href, parseRoute, Route } from './router';
import { forgetToken, loadToken, saveToken } from './session';
import { Audit } from './pages/audit';
import { DestinationPage, Destinations } from './pages/destinations';
import { Erasure } from './pages/erasure';
import { Reconciliation } from './pages/reconciliation';
import { Rejections } from './pages/rejections';
import { EventPage } from './pages/event';
import { Inbox } from './pages/inbox';
import { Orders } from './pages/orders';
import { Outbox } from './pages/outbox';
import { Overview } from './pages/overview';

function useRoute(): [Route, (hash: string) => void] {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return [route, (hash) => (location.hash = hash)];
}

export function App() {
  const [token, setToken] = useState(() => loadToken(sessionStorage));
  const [session, setSession] = useState<Session>();
  const [signInError, setSignInError] = useState<string>();
  const api = useMemo(() => (token ? new Api(token) : undefined), [token]);

  useEffect(() => {
    if (!api) return;
    api.session().then(setSession, (error: unknown) => {
      forgetToken(sessionStorage);
      setToken(null);
      setSession(undefined);
      setSignInError(signInMessage(error));
    });
  }, [api]);

  if (!api) {
    return (
      <SignIn
        error={signInError}
        onToken={(t) => {
          saveToken(sessionStorage, t);
          setSignInError(undefined);
          setToken(t);
        }}
      />
    );
  }
  if (!session) return <p class="muted page">Signing in…</p>;
  return (
    <Shell
      session={session}
      api={api}
      signOut={() => {
        forgetToken(sessionStorage);
        setSession(undefined);
        setToken(null);
      }}
    />
  );
}

function signInMessage(error: unknown): string {
  if (error instanceof ApiError && error.status === 401) return `This token was not accepted (${error.reason}). Check it and try again.`;
  const { reason, message } = describeError(error);
  return `Could not sign in: ${reason} (${message}).`;
}

function SignIn({ onToken, error }: { onToken: (token: string) => void; error?: string }) {
  const [value, setValue] = useState('');
  return (
    <main class="signin">
      <h1>webhook-inbox console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) onToken(value.trim());
        }}
      >
        <label>
          Admin token
          <input
            type="password"
            name="token"
            autoComplete="off"
            required
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" data-test="sign-in">
          Sign in
        </button>
        <p class="muted">Kept in this tab's session storage only, and sent as a Bearer header to the admin API.</p>
        {error && (
          <div class="error" role="alert" data-test="sign-in-error">
            {error}
          </div>
        )}
      </form>
    </main>
  );
}

/** [label, route, open to a token limited to tenants (its route is tenant scoped)] */
const NAV: [string, Route, boolean][] = [
  ['Overview', { page: 'overview' }, true],
  ['Inbox', { page: 'inbox', query: {} }, true],
  ['Outbox', { page: 'outbox', query: {} }, true],
  ['Orders', { page: 'orders', query: {} }, true],
  ['Rejections', { page: 'rejections', query: {} }, true],
  // Destinations, reconciliation and erasure span every tenant: the API answers 404 to a limited token.
  ['Destinations', { page: 'destinations' }, false],
  ['Reconciliation', { page: 'reconciliation' }, false],
  ['Erasure', { page: 'erasure' }, false],
  // The audit log spans every tenant: the API answers 404 to a limited token.
  ['Audit', { page: 'audit', query: {} }, false],
];

function Shell({ session, api, signOut }: { session: Session; api: Api; signOut: () => void }) {
  const [route, go] = useRoute();
  const current = route.page === 'event' ? 'inbox' : route.page === 'destination' ? 'destinations' : route.page;
  return (
    <>
      <header class="top">
        <strong>webhook-inbox</strong>
        <nav>
          {NAV.filter(([, , scoped]) => scoped || !session.tenants).map(([label, r]) => (
            <a key={label} href={href(r)} class={r.page === current ? 'active' : ''}>
              {label}
            </a>
          ))}
        </nav>
        <span class="who" data-test="who">
          {session.name} · {session.role}
          {session.tenants ? ` · tenants ${session.tenants.join(', ')}` : ''}
        </span>
        <button class="secondary small" onClick={signOut} data-test="sign-out">
          Sign out
        </button>
      </header>
      <main class="page">
        <Page route={route} api={api} session={session} go={go} />
      </main>
    </>
  );
}

function Page({ route, api, session, go }: { route: Route; api: Api; session: Session; go: (hash: string) => void }) {
  switch (route.page) {
    case 'overview':
      return <Overview api={api} />;
    case 'inbox':
      return <Inbox key={JSON.stringify(route.query)} api={api} session={session} query={route.query} go={go} />;
    case 'event':
      return <EventPage api={api} session={session} id={route.id} />;
    case 'outbox':
      return <Outbox key={JSON.stringify(route.query)} api={api} session={session} query={route.query} go={go} />;
    case 'orders':
      return <Orders api={api} query={route.query} go={go} />;
    case 'audit':
      return <Audit api={api} query={route.query} go={go} />;
    case 'rejections':
      return <Rejections key={JSON.stringify(route.query)} api={api} query={route.query} go={go} />;
    case 'destinations':
      return <Destinations api={api} />;
    case 'destination':
      return <DestinationPage key={route.name} api={api} session={session} name={route.name} />;
    case 'reconciliation':
      return <Reconciliation api={api} session={session} />;
    case 'erasure':
      return <Erasure api={api} session={session} />;
    default:
      return (
        <div class="error" role="alert">
          <strong class="reason">not_found</strong> No console page at {route.path}.
        </div>
      );
  }
}
