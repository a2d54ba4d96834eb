import { useState } from 'preact/hooks';
import { get, type List, patch, post, type Schema } from '../api.ts';
import { ActionButton } from '../components/action-button.tsx';
import { ActionForm } from '../components/action-form.tsx';
import { Detail } from '../components/detail.tsx';
import { InputField, useFields } from '../components/field.tsx';
import { PagedTable, Table } from '../components/paged-list.tsx';
import { navigate } from '../router.ts';
import { Badge, CopyButton, ErrorBox, Link, Time, useAction, useLoad } from '../ui.tsx';
import { DkimKeys } from './dkim-keys.tsx';
import { DmarcReports } from './dmarc.tsx';

type Impressum = Record<string, string | undefined>;
type DomainJson = Schema<'Domain'>;

export function Domains() {
  const list = useLoad(() => get<List<DomainJson>>('/domains?limit=100'), []);
  const add = useAction();
  const form = useFields({ name: '' }, add.error);
  return (
    <section>
      <h1>Domains</h1>
      <ActionForm
        label="Add a domain"
        action={add}
        submit="Add domain"
        submitClass="primary"
        fields={['name']}
        run={async () => {
          const d = await post<DomainJson>('/domains', form.values);
          navigate(`/domains/${d.id}`);
        }}
      >
        <InputField
          label="Domain name"
          hint="A subdomain such as mail.example.com is fine."
          required
          placeholder="example.com"
          {...form.field('name')}
        />
      </ActionForm>
      <PagedTable
        loaded={list}
        what="domains"
        empty="No domains yet. Add one to send live email from it."
        columns={['Name', 'Status', 'Added']}
      >
        {(d) => (
          <tr key={d.id}>
            <td>
              <Link href={`/domains/${d.id}`}>{d.name}</Link>
            </td>
            <td>
              <Badge value={d.status} />
            </td>
            <td>
              <Time value={d.created_at} />
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}

export function Domain({ id }: { id: string }) {
  const domain = useLoad(() => get<DomainJson>(`/domains/${encodeURIComponent(id)}`), [id]);
  const [current, setCurrent] = useState<DomainJson | null>(null);
  return (
    <Detail back={['/domains', 'Domains']} loaded={domain} what="this domain" data={current ?? domain.data}>
      {(d) => <DomainPage d={d} setCurrent={setCurrent} />}
    </Detail>
  );
}

function DomainPage({ d, setCurrent }: { d: DomainJson; setCurrent: (d: DomainJson) => void }) {
  const verify = useAction();
  const toggle = useAction();
  // Shown switched at once; the answer (or, on an error, the domain as it was) replaces it.
  const setFlag = (flag: 'open_tracking' | 'click_tracking' | 'inbound_enabled', value: boolean) => {
    const before = d;
    setCurrent({ ...d, [flag]: value });
    toggle.run(async () => {
      try {
        setCurrent(await patch<DomainJson>(`/domains/${d.id}`, { [flag]: value }));
      } catch (e) {
        setCurrent(before);
        throw e;
      }
    });
  };
  return (
    <>
      <h1>
        {d.name} <Badge value={d.status} />
      </h1>
      <p class="muted">
        Last checked <Time value={d.last_checked_at} />
        {d.verified_at && (
          <>
            {' '}
            · verified <Time value={d.verified_at} />
          </>
        )}
      </p>
      <h2>DNS records</h2>
      <p>
        Publish these at your DNS provider, then verify. The domain sends live once its required records are
        verified. The optional <code>return_path</code> records (a custom return path) move the envelope
        sender, and with it SPF and bounces, onto your domain; without them, bounces come back through this
        server's own bounce domain.
      </p>
      <Table items={d.dns_records} class="records" columns={['Type', 'Name', 'Value', 'Purpose', 'Status']}>
        {(r) => (
          <tr key={`${r.type} ${r.purpose} ${r.name}`} data-purpose={r.purpose}>
            <td>
              {r.type}
              {r.priority !== undefined && <span class="muted"> {r.priority}</span>}
            </td>
            <td class="wrap">
              <code>{r.name}</code> <CopyButton value={r.name} label={`${r.purpose} record name`} />
            </td>
            <td class="wrap">
              <code class="value">{r.value}</code>{' '}
              <CopyButton value={r.value} label={`${r.purpose} record value`} />
            </td>
            <td>
              {r.purpose}
              {r.rotation ? (
                <span class="muted"> ({r.rotation})</span>
              ) : (
                !r.required && <span class="muted"> (optional)</span>
              )}
            </td>
            <td>
              <Badge value={r.status} />
              {r.found && r.status !== 'verified' && <div class="muted wrap">found: {r.found}</div>}
            </td>
          </tr>
        )}
      </Table>
      <ActionButton
        class="primary"
        action={verify}
        run={async () => setCurrent(await post<DomainJson>(`/domains/${d.id}/verify`))}
      >
        {verify.busy ? 'Checking DNS…' : 'Verify'}
      </ActionButton>
      <ErrorBox error={verify.error} />

      <DkimKeys d={d} onChanged={setCurrent} />

      <h2>Tracking and inbound</h2>
      <fieldset class="switches" disabled={toggle.busy}>
        <legend class="sr-only">Tracking and inbound</legend>
        {(
          [
            ['open_tracking', 'Open tracking'],
            ['click_tracking', 'Click tracking'],
            ['inbound_enabled', 'Receive email (inbound MX)'],
          ] as const
        ).map(([flag, label]) => (
          <label key={flag} class="switch">
            <input
              type="checkbox"
              checked={d[flag]}
              onChange={(e) => setFlag(flag, e.currentTarget.checked)}
            />
            {label}
          </label>
        ))}
      </fieldset>
      <ErrorBox error={toggle.error} />

      <h2>Impressum</h2>
      <ImpressumForm domain={d} onSaved={setCurrent} />

      <DmarcReports domainId={d.id} />
    </>
  );
}

const IMPRESSUM_FIELDS: [string, string, boolean][] = [
  ['company_name', 'Company name', true],
  ['address', 'Address', true],
  ['country', 'Country (ISO code, e.g. DE)', true],
  ['email', 'Contact email', true],
  ['phone', 'Phone', false],
  ['representative', 'Representative', false],
  ['register_entry', 'Register entry', false],
  ['vat_id', 'VAT id', false],
];

/** The impressum form's values: every field, empty where the impressum has none. */
const impressumForm = (impressum: Impressum | null): Record<string, string> =>
  Object.fromEntries(IMPRESSUM_FIELDS.map(([k]) => [k, impressum?.[k] ?? '']));

function ImpressumForm({ domain, onSaved }: { domain: DomainJson; onSaved: (d: DomainJson) => void }) {
  const save = useAction();
  const form = useFields(impressumForm(domain.impressum), save.error);
  return (
    <ActionForm
      class="stack"
      label="Impressum"
      action={save}
      fields={IMPRESSUM_FIELDS.map(([k]) => `impressum.${k}`)}
      run={async () => {
        const body: Impressum = {};
        for (const [k] of IMPRESSUM_FIELDS) if (form.values[k].trim()) body[k] = form.values[k].trim();
        onSaved(await patch<DomainJson>(`/domains/${domain.id}`, { impressum: body }));
      }}
    >
      <p class="muted">The legal notice printed in broadcast footers: who sends, and how to reach them.</p>
      {IMPRESSUM_FIELDS.map(([key, label, required]) => (
        <InputField
          key={key}
          label={`${label}${required ? '' : ' (optional)'}`}
          {...form.field(key)}
          // As the API names the field, so that its error is shown here.
          name={`impressum.${key}`}
        />
      ))}
      <div class="row">
        <button type="submit" disabled={save.busy}>
          Save impressum
        </button>
        {domain.impressum && (
          <ActionButton
            class="danger"
            action={save}
            run={async () => {
              onSaved(await patch<DomainJson>(`/domains/${domain.id}`, { impressum: null }));
              form.set(impressumForm(null));
            }}
          >
            Remove impressum
          </ActionButton>
        )}
      </div>
    </ActionForm>
  );
}
