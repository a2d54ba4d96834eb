import type { ComponentChildren } from 'preact';
import { CopyButton } from '../ui.tsx';

/** A secret the API shows once: displayed until the user dismisses it, never stored. */
export function SecretOnce(props: {
  secret: string;
  /** What it is, for the copy button: `Copy {label}`. */
  label: string;
  children: ComponentChildren;
  onDone: () => void;
}) {
  return (
    <div class="notice secret" role="alert">
      <p>{props.children}</p>
      <p>
        <code class="value">{props.secret}</code> <CopyButton value={props.secret} label={props.label} />
      </p>
      <button type="button" class="small" onClick={props.onDone}>
        I have copied it
      </button>
    </div>
  );
}
