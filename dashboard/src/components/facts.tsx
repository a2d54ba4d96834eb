import type { ComponentChildren } from 'preact';
import { Time } from '../ui.tsx';

/**
 * A term of a `<dl class="facts">` and what it says: `children`, or the moment `time`. It is left out when there
 * is nothing to say: no time, and children null, undefined or false (as `cond && value` gives).
 */
export function Fact(props: { label: string; time?: string | null; children?: ComponentChildren }) {
  const said = props.time ? <Time value={props.time} /> : props.children;
  if (said === null || said === undefined || said === false) return null;
  return (
    <>
      <dt>{props.label}</dt>
      <dd>{said}</dd>
    </>
  );
}
