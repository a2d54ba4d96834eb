import type { ComponentChildren } from 'preact';
import { Link, type Loaded, Status } from '../ui.tsx';

type Back = [href: string, label: string];

/** The link back to the list a detail screen belongs to. */
export function BackLink({ back: [href, label] }: { back: Back }) {
  return (
    <p>
      <Link href={href}>{`← ${label}`}</Link>
    </p>
  );
}

/** A detail screen before its data is there: the back link, then loading or why it failed. */
export function NotLoaded(props: { back: Back; loaded: Loaded<unknown>; what: string }) {
  return (
    <section>
      <BackLink back={props.back} />
      <Status loaded={props.loaded} what={props.what} />
    </section>
  );
}

/** A detail screen: its back link and what `children` makes of `data` once it is there. */
export function Detail<T>(props: {
  back: Back;
  loaded: Loaded<unknown>;
  what: string;
  data: T | null | undefined;
  children: (data: T) => ComponentChildren;
}) {
  if (!props.data) return <NotLoaded back={props.back} loaded={props.loaded} what={props.what} />;
  return (
    <section>
      <BackLink back={props.back} />
      {props.children(props.data)}
    </section>
  );
}
