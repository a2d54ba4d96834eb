import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Transaction } from '../../platform/db/database.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { projections } from '../../projections/all.ts';

/** Every event type declared in domain/<aggregate>/<aggregate>.events.ts. */
function knownEventTypes(): string[] {
  const root = join(import.meta.dirname, '..', '..', 'domain');
  const types = new Set<string>();
  for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.events.ts')) continue;
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/type: '([A-Z][A-Za-z]+)'/g)) types.add(m[1]);
  }
  return [...types];
}

describe('projection event types', () => {
  const all = knownEventTypes();

  it('finds the event types to check against', () => {
    expect(all).toEqual(
      expect.arrayContaining(['EmailQueued', 'DomainVerified', 'ApiKeyCreated', 'WebhookCreated']),
    );
  });

  // The runner skips events outside `types` without a transaction: a projection must then really ignore them.
  for (const projection of projections.filter((p) => p.types)) {
    it(`${projection.name} writes nothing for events outside its types`, async () => {
      const queries: string[] = [];
      const tx: Transaction = {
        async query(sql) {
          queries.push(sql);
          return { rows: [], rowCount: 0 };
        },
        atCommit(sql) {
          queries.push(sql);
        },
      };
      for (const type of all.filter((t) => !projection.types!.includes(t))) {
        const event = {
          type,
          data: {},
          metadata: { orgId: 'o', mode: 'test', actor: 'a' },
          streamId: 's',
          revision: 0,
          position: '1',
          createdAt: new Date(),
        };
        await projection.apply(tx, event as StoredEvent);
        expect(queries, `${projection.name} handles ${type}: list it in its types`).toEqual([]);
      }
    });
  }
});
