import type { ComponentChildren } from 'preact';
import type { useAction } from '../ui.tsx';

/**
 * A button that runs `run` through `action` (disabled while it runs), after the user confirms `confirm`
 * when it is given; `onDone` follows when `run` succeeded (reload what it changed, leave a deleted item).
 */
export function ActionButton(props: {
  action: ReturnType<typeof useAction>;
  run: () => Promise<unknown>;
  onDone?: () => void;
  confirm?: string;
  class?: string;
  disabled?: boolean;
  children: ComponentChildren;
}) {
  const run = async () => {
    await props.run();
    props.onDone?.();
  };
  return (
    <button
      type="button"
      class={props.class}
      disabled={props.disabled ?? props.action.busy}
      onClick={() => (props.confirm === undefined || confirm(props.confirm)) && props.action.run(run)}
    >
      {props.children}
    </button>
  );
}
