import { describe, it } from 'vitest';
import { audienceDecider } from '../../domain/audiences/audience.decider.ts';
import type { AudienceEvent } from '../../domain/audiences/audience.events.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const caller = { audienceId: 'aud_1', orgId: 'org_1', mode: 'live' as const };
const created: AudienceEvent = {
  type: 'AudienceCreated',
  data: { ...caller, name: 'Customers', createdAt: 'T1' },
};
const del = { ...caller, type: 'DeleteAudience' as const, at: 'T3' };
const deleted: AudienceEvent = { type: 'AudienceDeleted', data: { audienceId: 'aud_1', deletedAt: 'T3' } };

describe('audience decider', () => {
  it('creates an audience, once', () => {
    const create = { ...caller, type: 'CreateAudience' as const, name: 'Customers', at: 'T1' };
    spec(audienceDecider).given([]).when(create).then([created]);
    spec(audienceDecider).given([created]).when(create).then([]);
  });

  it('renames it; the same name appends nothing', () => {
    spec(audienceDecider)
      .given([created])
      .when({ ...caller, type: 'RenameAudience', name: 'Clients', at: 'T2' })
      .then([{ type: 'AudienceRenamed', data: { audienceId: 'aud_1', name: 'Clients', renamedAt: 'T2' } }]);
    spec(audienceDecider)
      .given([created])
      .when({ ...caller, type: 'RenameAudience', name: 'Customers', at: 'T2' })
      .then([]);
  });

  it('deletes it; a deleted audience is not found', () => {
    spec(audienceDecider).given([created]).when(del).then([deleted]);
    spec(audienceDecider)
      .given([created, deleted])
      .when({ ...caller, type: 'RenameAudience', name: 'x', at: 'T4' })
      .thenFails('not_found');
  });
  itHidesFromOtherCallers(audienceDecider, [created], del);
});
