import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { get, type List, query } from '../api.ts';
import { Empty, ErrorBox, type Loaded, Pager, Status, useLoad } from '../ui.tsx';

export type Cursor = { starting_after?: string; ending_before?: string };
export interface Pages {
  cursor: Cursor;
  onPage: (cursor: Cursor) => void;
}

/** One page of `path` (`limit` items), with the cursor of the page shown kept here. */
export function usePagedList<T>(path: string, limit: number): Loaded<List<T>> & { pages: Pages } {
  const [cursor, setCursor] = useState<Cursor>({});
  const url = `${path}${query({ limit, ...cursor })}`;
  const list = useLoad(() => get<List<T>>(url), [url]);
  return { ...list, pages: { cursor, onPage: setCursor } };
}

/**
 * A list as the API gives it: loading or failed (`Status`), the `empty` text when there is nothing, else
 * what `children` makes of the items; then, with `pages`, previous / next.
 */
export function PagedList<T extends { id: string }>(props: {
  loaded: Loaded<List<T>>;
  what: string;
  empty: ComponentChildren;
  /** The error of an action on the items, shown above them. */
  error?: unknown;
  pages?: Pages;
  children: (items: T[]) => ComponentChildren;
}) {
  const list = props.loaded.data;
  return (
    <>
      <Status loaded={props.loaded} what={props.what} />
      {props.error ? <ErrorBox error={props.error} /> : null}
      {list && (list.data.length === 0 ? <Empty>{props.empty}</Empty> : props.children(list.data))}
      {props.pages && <Pager list={list} cursor={props.pages.cursor} onPage={props.pages.onPage} />}
    </>
  );
}

/** A table of rows with a header per column (and, with `actions`, a last column for buttons). */
export function Table(props: {
  columns: string[];
  actions?: boolean;
  caption?: string;
  busy?: boolean;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table class={props.class ? `list ${props.class}` : 'list'} aria-busy={props.busy}>
        {props.caption && <caption class="sr-only">{props.caption}</caption>}
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
            {props.actions && (
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
