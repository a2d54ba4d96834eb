import { post, type Schema } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { Table } from '../components/paged-list.tsx';
import { Badge, ErrorBox, Time, useAction } from '../ui.tsx';

type DomainJson = Schema<'Domain'>;

/** What each state asks of the user: the rotation waits on them to publish, then tells them when to delete. */
const NEXT: Record<DomainJson['dkim_keys'][number]['status'], string> = {
  active: '',
  pending: 'Publish its record; it signs once the record verifies (Ed25519: beside RSA).',
  retiring: 'Keep its record published until then: mail signed with it may still be in flight.',
  removable: 'Its record may be deleted from DNS now.',
};

/** The domain's DKIM keys and their rotation state, with the button that starts a rotation. */
export function DkimKeys({ d, onChanged }: { d: DomainJson; onChanged: (d: DomainJson) => void }) {
  const rotate = useAction();
  const add = useAction();
  const pending = d.dkim_keys.some((k) => k.algorithm === 'rsa' && k.status === 'pending');
  const hasEd25519 = d.dkim_keys.some((k) => k.algorithm === 'ed25519');
  return (
    <>
      <h2>DKIM keys</h2>
      <Table
        items={d.dkim_keys}
        class="dkim-keys"
        columns={['Selector', 'Algorithm', 'State', 'Signing', 'Next']}
      >
        {(k) => (
          <tr key={k.selector} data-selector={k.selector}>
            <td>
              <code>{k.selector}</code>
            </td>
            <td>{k.algorithm === 'ed25519' ? 'Ed25519' : 'RSA'}</td>
            <td>
              <Badge value={k.status} />
            </td>
            <td>{k.signing ? 'yes' : 'no'}</td>
            <td class="wrap">
              {NEXT[k.status]}
              {k.removable_after && k.status === 'retiring' && (
                <>
                  {' '}
                  Removable after <Time value={k.removable_after} />.
                </>
              )}
            </td>
          </tr>
        )}
      </Table>
      <ActionButton
        action={rotate}
        disabled={pending || rotate.busy}
        run={async () => onChanged(await post<DomainJson>(`/domains/${d.id}/dkim/rotate`))}
      >
        {rotate.busy ? 'Creating a key…' : 'Rotate DKIM key'}
      </ActionButton>
      {!hasEd25519 && (
        <ActionButton
          action={add}
          run={async () => onChanged(await post<DomainJson>(`/domains/${d.id}/dkim/ed25519`))}
        >
          {add.busy ? 'Creating a key…' : 'Add Ed25519 key'}
        </ActionButton>
      )}
      <ErrorBox error={rotate.error ?? add.error} />
    </>
  );
}
