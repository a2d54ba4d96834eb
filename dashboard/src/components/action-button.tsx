import type { ComponentChildren } from 'preact';
import type { useAction } from '../ui.tsx';

/**
 * A button that runs `run` through `action` (disabled while it runs), after the user confirms `confirm`
 * when it is given.
 */
export function ActionButton(props: {
  action: ReturnType<typeof useAction>;
  run: () => Promise<unknown>;
  confirm?: string;
  class?: string;
  disabled?: boolean;
  children: ComponentChildren;
}) {
  return (
    <button
      type="button"
      class={props.class}
      disabled={props.disabled ?? props.action.busy}
      onClick={() => (props.confirm === undefined || confirm(props.confirm)) && props.action.run(props.run)}
    >
      {props.children}
    </button>
  );
}
