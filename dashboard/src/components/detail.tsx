import type { ComponentChildren } from 'preact';
import { type Loaded, Link, Status } from '../ui.tsx';

/** The link back to the list a detail screen belongs to. */
export function BackLink({ href, children }: { href: string; children: string }) {
  return (
    <p>
      <Link href={href}>{`← ${children}`}</Link>
    </p>
  );
}

/** A detail screen: its back link, then `children` once `data` is there, or the loading state until then. */
export function Detail<T>(props: {
  back: [href: string, label: string];
  loaded: Loaded<unknown>;
  what: string;
  data: T | null | undefined;
  children: (data: T) => ComponentChildren;
}) {
  return (
    <section>
      <BackLink href={props.back[0]}>{props.back[1]}</BackLink>
      {props.data ? props.children(props.data) : <Status loaded={props.loaded} what={props.what} />}
    </section>
  );
}
