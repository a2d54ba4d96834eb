import type { ComponentChildren } from 'preact';
import { del } from '../api.ts';
import type { useAction } from '../ui.tsx';

interface ActionButtonProps {
  action: ReturnType<typeof useAction>;
  run: () => Promise<unknown>;
  confirm?: string;
  class?: string;
  disabled?: boolean;
  children: ComponentChildren;
}

/**
 * A button that runs `run` through `action` (disabled while it runs), after the user confirms `confirm`
 * when it is given.
 */
export function ActionButton(props: ActionButtonProps) {
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

/** An `ActionButton` that deletes the API's `path`, then does `onDeleted` (reloads a list, leaves a screen). */
export function DeleteButton(
  props: Omit<ActionButtonProps, 'run'> & { path: string; onDeleted: () => void },
) {
  const { path, onDeleted, ...button } = props;
  return (
    <ActionButton
      {...button}
      run={async () => {
        await del(path);
        onDeleted();
      }}
    />
  );
}
