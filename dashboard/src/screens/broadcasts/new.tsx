import { post, type Schema } from '../../api.ts';
import { BackLink } from '../../components/detail.tsx';
import { navigate } from '../../router.ts';
import { BroadcastForm } from './form.tsx';
import { EMPTY } from './form-state.ts';
import { BACK } from './list.tsx';

type BroadcastJson = Schema<'Broadcast'>;

export function NewBroadcast() {
  return (
    <section>
      <BackLink back={BACK} />
      <h1>New broadcast</h1>
      <BroadcastForm
        initial={EMPTY}
        submitLabel="Create draft"
        run={async (body) => {
          const b = await post<BroadcastJson>('/broadcasts', body);
          navigate(`/broadcasts/${b.id}`);
        }}
      />
    </section>
  );
}
