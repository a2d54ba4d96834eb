import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.ts';
import { onLinkClick } from './router.ts';

export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  'aria-current'?: any;
}) {
  return (
    <a href={props.href} class={props.class} aria-current={props['aria-current']} onClick={onLinkClick}>
      {props.children}
    </a>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (and on `reload()`), keeping the previous data while it runs. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** What a screen shows while it loads, when it failed, or when a sending-only key may not read it. */
export function Status({ loaded, what }: { loaded: Loaded<unknown>; what: string }) {
  if (loaded.error) return <ErrorBox error={loaded.error} what={what} />;
  if (loaded.loading && loaded.data === undefined)
    return (
      <p class="muted" role="status" aria-live="polite">
        Loading {what}…
      </p>
    );
  return null;
}

/** Why something failed (nothing while `error` is unset). */
export function ErrorBox({ error, what }: { error: unknown; what?: string }) {
  if (!error) return null;
  if (error instanceof ApiError && error.forbidden)
    return (
      <div class="notice warn" role="alert">
        <strong>This key can only send email.</strong> A <code>sending_access</code> key cannot read{' '}
        {what ?? 'this page'}. Sign in with a <code>full_access</code> key to see it.
      </div>
    );
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div class="notice error" role="alert">
      {message}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** The attributes that tie a field's control to its label and to the hint or error beneath it. */
export interface Tied {
  id: string;
  'aria-describedby': string | undefined;
  'aria-invalid': boolean;
}

/** A form field whose API error (a message naming it in backticks) is shown beneath it. */
export function Field(props: {
  label: string;
  name: string;
  error?: unknown;
  hint?: string;
  children: (tied: Tied) => ComponentChildren;
}) {
  const id = `f-${props.name.replace(/\W/g, '-')}`;
  const err =
    props.error instanceof ApiError && fieldMatches(props.error.field, props.name) ? props.error : null;
  const describedBy = err ? `${id}-error` : props.hint ? `${id}-hint` : undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children({ id, 'aria-describedby': describedBy, 'aria-invalid': !!err })}
      {props.hint && !err && (
        <small id={`${id}-hint`} class="muted">
          {props.hint}
        </small>
      )}
      {err && (
        <small id={`${id}-error`} class="field-error" role="alert">
          {err.message}
        </small>
      )}
    </div>
  );
}

/** `to[0]` and `impressum.company` belong to the fields `to` and `impressum`. */
function fieldMatches(field: string | null, name: string) {
  return field !== null && (field === name || field.startsWith(`${name}.`) || field.startsWith(`${name}[`));
}

/** The error of a form, unless a field shows it. */
export function FormError({ error, fields }: { error: unknown; fields: string[] }) {
  if (!error) return null;
  if (error instanceof ApiError && fields.some((f) => fieldMatches(error.field, f))) return null;
  return <ErrorBox error={error} />;
}

export function CopyButton({ value, label }: { value: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      aria-label={`Copy ${label}`}
      onClick={async () => {
        await navigator.clipboard?.writeText(value).catch(() => {});
        setDone(true);
        setTimeout(() => setDone(false), 1500);
      }}
    >
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

export function Badge({ value }: { value: string | null | undefined }) {
  if (!value) return null;
  return <span class={`badge s-${value}`}>{value.replace(/_/g, ' ')}</span>;
}

export function Time({ value }: { value: string | null | undefined }) {
  if (!value) return <span class="muted">—</span>;
  const d = new Date(value);
  return (
    <time dateTime={value} title={value}>
      {d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })}
    </time>
  );
}

/** Previous / next for the API's cursor pagination. */
export function Pager(props: {
  list: { data: { id: string }[]; has_more: boolean } | undefined;
  cursor: { starting_after?: string; ending_before?: string };
  onPage: (cursor: { starting_after?: string; ending_before?: string }) => void;
}) {
  const { list, cursor } = props;
  if (!list || list.data.length === 0) return null;
  const first = list.data[0].id;
  const last = list.data[list.data.length - 1].id;
  // Going back (ending_before), has_more says whether there is more before; going forward, after.
  const back = cursor.ending_before ? list.has_more : !!cursor.starting_after;
  const forward = cursor.ending_before ? true : list.has_more;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={!back} onClick={() => props.onPage({ ending_before: first })}>
        ← Newer
      </button>
      <button type="button" disabled={!forward} onClick={() => props.onPage({ starting_after: last })}>
        Older →
      </button>
    </nav>
  );
}

/** Runs an action, remembering its error (for a form) and whether it is running. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async <T,>(f: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await f();
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, setError };
}
