import { del, modeOf, post, type Schema, storedKey } from '../../api.ts';
import { ActionButton } from '../../components/action-button.tsx';
import { ActionForm } from '../../components/action-form.tsx';
import { InputField, useFields } from '../../components/field.tsx';
import { navigate } from '../../router.ts';
import { FormError, type useAction } from '../../ui.tsx';
import { toLocalInput } from '../email.tsx';
import { FIELDS } from './form-state.ts';

type BroadcastJson = Schema<'Broadcast'>;

export function SendPanel(props: {
  b: BroadcastJson;
  dirty: boolean;
  act: ReturnType<typeof useAction>;
  onChange: () => void;
}) {
  const { b, act } = props;
  const schedule = useFields({ send_at: '' }, act.error);
  const live = modeOf(storedKey() ?? '') === 'live';
  const blocked = props.dirty || act.busy;
  return (
    <section class="send-panel" aria-labelledby="send-heading">
      <h2 id="send-heading">Send</h2>
      <p class="muted">
        {live ? (
          <>
            <strong>Live mode:</strong> real email to every contact of the audience who may receive it.
          </>
        ) : (
          <>
            <strong>Test mode:</strong> the simulator answers; nothing is delivered.
          </>
        )}{' '}
        {props.dirty && <strong>Save or discard your changes first.</strong>}
      </p>
      <div class="row">
        <ActionButton
          class="primary"
          action={act}
          disabled={blocked}
          confirm={`Send ${b.name} now${live ? ' to real recipients' : ' (test mode)'}?`}
          run={() => post(`/broadcasts/${b.id}/send`)}
          onDone={props.onChange}
        >
          Send now
        </ActionButton>
        <ActionButton
          class="danger"
          action={act}
          confirm={`Delete the draft ${b.name}?`}
          run={() => del(`/broadcasts/${b.id}`)}
          onDone={() => navigate('/broadcasts')}
        >
          Delete draft
        </ActionButton>
      </div>
      <ActionForm
        label="Schedule"
        action={act}
        run={async () => {
          await post(`/broadcasts/${b.id}/send`, {
            send_at: new Date(schedule.values.send_at).toISOString(),
          });
          props.onChange();
        }}
      >
        <InputField
          label="Send at (your time zone)"
          type="datetime-local"
          required
          min={toLocalInput(new Date().toISOString())}
          {...schedule.field('send_at')}
        />
        <button type="submit" disabled={blocked}>
          Schedule
        </button>
      </ActionForm>
      <FormError error={act.error} fields={FIELDS} />
    </section>
  );
}
