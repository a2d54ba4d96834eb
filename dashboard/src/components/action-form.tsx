import type { ComponentChildren } from 'preact';
import { FormError, type useAction } from '../ui.tsx';

/**
 * A form that runs `run` through `action` on submit. With `submit`, its submit button (disabled while the
 * action runs) follows the fields; with `fields`, the action's error is shown below unless one of them shows it.
 */
export function ActionForm(props: {
  label: string;
  action: ReturnType<typeof useAction>;
  run: () => Promise<unknown>;
  class?: string;
  submit?: string;
  submitClass?: string;
  fields?: string[];
  children: ComponentChildren;
}) {
  return (
    <form
      class={props.class ?? 'inline-form'}
      aria-label={props.label}
      onSubmit={(e) => {
        e.preventDefault();
        props.action.run(props.run);
      }}
    >
      {props.children}
      {props.submit !== undefined && (
        <button type="submit" class={props.submitClass} disabled={props.action.busy}>
          {props.submit}
        </button>
      )}
      {props.fields && <FormError error={props.action.error} fields={props.fields} />}
    </form>
  );
}
