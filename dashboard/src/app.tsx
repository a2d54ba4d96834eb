import { useEffect, useState } from 'preact/hooks';
import { clearKey, type Mode, modeOf, setUnauthorizedHandler, storedKey } from './api.ts';
import { navigate, useLocation } from './router.ts';
import { ApiKeys } from './screens/api-keys.tsx';
import { Broadcast } from './screens/broadcasts/detail.tsx';
import { Broadcasts } from './screens/broadcasts/list.tsx';
import { NewBroadcast } from './screens/broadcasts/new.tsx';
import { Contacts } from './screens/contacts.tsx';
import { Domain, Domains } from './screens/domains.tsx';
import { Email } from './screens/email.tsx';
import { Emails } from './screens/emails.tsx';
import { Overview } from './screens/overview.tsx';
import { Queue, QueueDestinationScreen } from './screens/queue.tsx';
import { Received, ReceivedEmail } from './screens/received.tsx';
import { SignIn } from './screens/sign-in.tsx';
import { Suppressions } from './screens/suppressions.tsx';
import { Template, Templates } from './screens/templates.tsx';
import { Webhook, Webhooks } from './screens/webhooks.tsx';
import { Link } from './ui.tsx';

const NAV: [string, string][] = [
  ['/', 'Overview'],
  ['/emails', 'Emails'],
  ['/broadcasts', 'Broadcasts'],
  ['/domains', 'Domains'],
  ['/templates', 'Templates'],
  ['/webhooks', 'Webhooks'],
  ['/api-keys', 'API keys'],
  ['/suppressions', 'Suppressions'],
  ['/queue', 'Queue'],
  ['/received', 'Received'],
  ['/contacts', 'Contacts'],
];

function screenFor(path: string) {
  const [, section, id] = path.split('/');
  switch (section) {
    case '':
      return <Overview />;
    case 'emails':
      return id ? <Email id={decodeURIComponent(id)} /> : <Emails />;
    case 'broadcasts':
      if (id === 'new') return <NewBroadcast />;
      return id ? <Broadcast id={decodeURIComponent(id)} /> : <Broadcasts />;
    case 'domains':
      return id ? <Domain id={decodeURIComponent(id)} /> : <Domains />;
    case 'templates':
      return id ? <Template id={decodeURIComponent(id)} /> : <Templates />;
    case 'webhooks':
      return id ? <Webhook id={decodeURIComponent(id)} /> : <Webhooks />;
    case 'api-keys':
      return <ApiKeys />;
    case 'suppressions':
      return <Suppressions />;
    case 'queue':
      return id ? <QueueDestinationScreen destination={decodeURIComponent(id)} /> : <Queue />;
    case 'received':
      return id ? <ReceivedEmail id={decodeURIComponent(id)} /> : <Received />;
    case 'contacts':
      return <Contacts />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p>
            Nothing here. <Link href="/">Back to the overview</Link>.
          </p>
        </section>
      );
  }
}

function ModeBanner({ mode }: { mode: Mode | null }) {
  if (mode === 'test')
    return (
      <div class="mode mode-test" role="note" data-mode="test">
        <strong>Test mode</strong>{' '}
        <span>— test data only; nothing is delivered (the simulator answers).</span>
      </div>
    );
  if (mode === 'live')
    return (
      <div class="mode mode-live" role="note" data-mode="live">
        <strong>Live mode</strong> <span>— real email to real recipients.</span>
      </div>
    );
  return (
    <div class="mode" role="note" data-mode="unknown">
      <strong>Unknown mode</strong>
    </div>
  );
}

export function App() {
  const [key, setKey] = useState(storedKey());
  const { path } = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  // Why the app signed itself out (the API refused the key), for the sign-in screen to say.
  const [refused, setRefused] = useState<string | null>(null);
  const signOut = (why: string | null = null) => {
    clearKey();
    setKey(null);
    setRefused(why);
  };
  useEffect(() => setUnauthorizedHandler((e) => signOut(`Signed out: ${e.message}`)), []);
  useEffect(() => setMenuOpen(false), [path]);
  useEffect(() => {
    const title = NAV.find(([href]) => href !== '/' && path.startsWith(href))?.[1] ?? 'Overview';
    document.title = `${title} · Postline`;
  }, [path]);

  if (!key) return <SignIn onSignedIn={setKey} refused={refused} />;
  const mode = modeOf(key);
  const section = `/${path.split('/')[1] ?? ''}`;
  return (
    <div class={`shell shell-${mode ?? 'unknown'}`}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <ModeBanner mode={mode} />
      <header class="top">
        <Link href="/" class="brand">
          Postline
        </Link>
        <button
          type="button"
          class="menu-toggle"
          aria-expanded={menuOpen}
          aria-controls="nav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <span class="key-hint" title="The key this tab is signed in with">
          {key.slice(0, 12)}…
        </span>
        <button
          type="button"
          class="small"
          onClick={() => {
            signOut();
            navigate('/');
          }}
        >
          Sign out
        </button>
      </header>
      <div class="layout">
        <nav id="nav" class={menuOpen ? 'open' : ''} aria-label="Sections">
          <ul>
            {NAV.map(([href, label]) => (
              <li key={href}>
                <Link href={href} aria-current={section === href ? 'page' : undefined}>
                  {label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1}>
          {screenFor(path)}
        </main>
      </div>
    </div>
  );
}
