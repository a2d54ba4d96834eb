import { useEffect, useState } from 'preact/hooks';

// Client-side routes are plain paths (`/emails/em_…`); Postline answers any of them with index.html.

const listeners = new Set<() => void>();
addEventListener('popstate', () => {
  for (const l of listeners) l();
});

export function navigate(to: string) {
  if (to === location.pathname + location.search) return;
  history.pushState(null, '', to);
  for (const l of listeners) l();
  scrollTo(0, 0);
}

/** The current path and query, re-rendering on navigation. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((t) => t + 1);
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return { path: location.pathname, search: new URLSearchParams(location.search) };
}

/** A link that navigates without reloading the page (and still opens in a new tab with a modifier key). */
export function onLinkClick(e: MouseEvent) {
  const a = (e.currentTarget as HTMLAnchorElement) ?? null;
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.getAttribute('href') ?? '/');
}
