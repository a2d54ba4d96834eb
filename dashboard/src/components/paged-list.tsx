import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { get, type List, query } from '../api.ts';
import { Empty, ErrorBox, type Loaded, Pager, Status, useLoad } from '../ui.tsx';

export type Cursor = { starting_after?: string; ending_before?: string };
export interface Pages {
  cursor: Cursor;
  onPage: (cursor: Cursor) => void;
}
/** A list as it loads; one of pages has the cursor of the page shown and a way to another. */
export type LoadedList<T> = Loaded<List<T>> & { pages?: Pages };

/** One page of `path` (`limit` items), with the cursor of the page shown kept here. */
export function usePagedList<T>(path: string, limit: number): LoadedList<T> & { pages: Pages } {
  const [cursor, setCursor] = useState<Cursor>({});
  const url = `${path}${query({ limit, ...cursor })}`;
  const list = useLoad(() => get<List<T>>(url), [url]);
  return { ...list, pages: { cursor, onPage: setCursor } };
}

interface ListProps<T> {
  loaded: LoadedList<T>;
  what: string;
  empty: ComponentChildren;
  /** The error of an action on the items, shown above them. */
  error?: unknown;
}

/**
 * A list as the API gives it: loading or failed (`Status`), the `empty` text when there is nothing, else
 * what `children` makes of the items; then, on a list of pages, previous / next.
 */
export function PagedList<T extends { id: string }>(
  props: ListProps<T> & { children: (items: T[]) => ComponentChildren },
) {
  const list = props.loaded.data;
  const pages = props.loaded.pages;
  return (
    <>
      <Status loaded={props.loaded} what={props.what} />
      <ErrorBox error={props.error} />
      {list && (list.data.length === 0 ? <Empty>{props.empty}</Empty> : props.children(list.data))}
      {pages && <Pager list={list} cursor={pages.cursor} onPage={pages.onPage} />}
    </>
  );
}

interface TableProps {
  columns: string[];
  /** A last column for buttons. */
  actions?: boolean;
  caption?: string;
  busy?: boolean;
  class?: string;
}

/** A `PagedList` shown as a `Table`: a row (`children`) for each item. */
export function PagedTable<T extends { id: string }>(
  props: ListProps<T> & TableProps & { children: (item: T) => ComponentChildren },
) {
  const { loaded, what, empty, error, children, ...table } = props;
  return (
    <PagedList loaded={loaded} what={what} empty={empty} error={error}>
      {(items) => (
        <Table {...table} items={items}>
          {children}
        </Table>
      )}
    </PagedList>
  );
}

/**
 * A table of a row (`children`) for each of `items`, with a header per column; with `empty`, that text instead
 * when there are no items.
 */
export function Table<T>(
  props: TableProps & { items: T[]; empty?: ComponentChildren; children: (item: T) => ComponentChildren },
) {
  if (props.empty !== undefined && props.items.length === 0) return <Empty>{props.empty}</Empty>;
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
        <tbody>{props.items.map((item) => props.children(item))}</tbody>
      </table>
    </div>
  );
}
