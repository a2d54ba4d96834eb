import { get, type List, query, type Schema } from '../api.ts';
import { type LoadedList, PagedTable } from '../components/paged-list.tsx';
import { navigate, useLocation } from '../router.ts';
import { Badge, Link, Time, useLoad } from '../ui.tsx';

const STATUSES = ['queued', 'scheduled', 'sending', 'sent', 'delivered', 'bounced', 'complained', 'canceled'];
const FILTERS = ['status', 'domain', 'tag', 'from', 'to'] as const;

export type EmailSummary = Schema<'EmailSummary'>;

/** The list of sent emails with the API's filters and cursor pages, all kept in the URL. */
export function Emails() {
  const { search } = useLocation();
  const params = Object.fromEntries(search) as Record<string, string>;
  const apiQuery = query({
    limit: 20,
    status: params.status,
    domain: params.domain,
    tag: params.tag,
    from_date: params.from ? `${params.from}T00:00:00Z` : undefined,
    to_date: params.to ? `${params.to}T23:59:59.999Z` : undefined,
    starting_after: params.starting_after,
    ending_before: params.ending_before,
  });
  const go = (changes: Record<string, string | undefined>) => {
    const next = { ...params, ...changes };
    navigate(`/emails${query(next)}`);
  };
  const list: LoadedList<EmailSummary> = {
    ...useLoad(() => get<List<EmailSummary>>(`/emails${apiQuery}`), [apiQuery]),
    pages: {
      cursor: { starting_after: params.starting_after, ending_before: params.ending_before },
      onPage: (c) => go({ starting_after: c.starting_after, ending_before: c.ending_before }),
    },
  };
  const onFilter = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const values: Record<string, string | undefined> = {
      starting_after: undefined,
      ending_before: undefined,
    };
    for (const f of FILTERS) values[f] = String(form.get(f) ?? '') || undefined;
    go(values);
  };
  return (
    <section>
      <h1>Emails</h1>
      <form class="filters" onSubmit={onFilter} aria-label="Filter emails">
        <label>
          Status
          <select name="status" value={params.status ?? ''}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Domain
          <input name="domain" value={params.domain ?? ''} placeholder="example.com" />
        </label>
        <label>
          Tag
          <input name="tag" value={params.tag ?? ''} placeholder="welcome" />
        </label>
        <label>
          From date
          <input name="from" type="date" value={params.from ?? ''} />
        </label>
        <label>
          To date
          <input name="to" type="date" value={params.to ?? ''} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <PagedTable
        loaded={list}
        what="emails"
        empty={`No emails${search.size ? ' match these filters' : ' yet: send one with POST /v1/emails'}.`}
        columns={['Status', 'To', 'Subject', 'Created']}
        caption="Emails, newest first"
        busy={list.loading}
      >
        {(e) => (
          <tr key={e.id}>
            <td>
              <Badge value={e.status} />
            </td>
            <td class="truncate">{e.to.join(', ')}</td>
            <td>
              <Link href={`/emails/${e.id}`}>{e.subject || <em>(no subject)</em>}</Link>
              {e.tags.length > 0 && <span class="muted small-text"> {e.tags.join(' · ')}</span>}
            </td>
            <td>
              <Time value={e.created_at} />
            </td>
          </tr>
        )}
      </PagedTable>
    </section>
  );
}
