import { describe, expect, it } from 'vitest';
import { suppressionDecider } from '../../domain/suppressions/suppression.decider.ts';
import { type SuppressionEvent, suppressionStream } from '../../domain/suppressions/suppression.events.ts';
import { spec } from '../support/given-when-then.ts';

const add = {
  type: 'AddSuppression' as const,
  suppressionId: 'sup_1',
  orgId: 'org_1',
  mode: 'live' as const,
  email: 'Ann@Example.com',
  reason: 'hard_bounce' as const,
  sourceEmailId: 'em_1',
  at: '2026-01-01T00:00:00.000Z',
};
const added: SuppressionEvent = {
  type: 'SuppressionAdded',
  data: {
    suppressionId: 'sup_1',
    orgId: 'org_1',
    mode: 'live',
    email: 'Ann@Example.com',
    reason: 'hard_bounce',
    sourceEmailId: 'em_1',
    createdAt: add.at,
  },
};
const removed: SuppressionEvent = {
  type: 'SuppressionRemoved',
  data: { suppressionId: 'sup_1', removedAt: '2026-01-02T00:00:00.000Z' },
};
const remove = { type: 'RemoveSuppression' as const, suppressionId: 'sup_1', at: removed.data.removedAt };

describe('suppression decider', () => {
  it('suppresses an address', () => spec(suppressionDecider).given([]).when(add).then([added]));
  it('adding an address already suppressed is a no-op', () =>
    spec(suppressionDecider)
      .given([added])
      .when({ ...add, suppressionId: 'sup_2', reason: 'manual' })
      .then([]));
  it('removes by id', () => spec(suppressionDecider).given([added]).when(remove).then([removed]));
  it('an unknown or already removed id is not found', () => {
    spec(suppressionDecider)
      .given([added])
      .when({ ...remove, suppressionId: 'sup_9' })
      .thenFails('not_found');
    spec(suppressionDecider).given([added, removed]).when(remove).thenFails('not_found');
  });
  it('suppresses again after a removal, with a new id', () =>
    spec(suppressionDecider)
      .given([added, removed])
      .when({ ...add, suppressionId: 'sup_2' })
      .then([{ type: 'SuppressionAdded', data: { ...added.data, suppressionId: 'sup_2' } }]));
  it('keys the stream by organization, mode and the address in any letter case', () => {
    expect(suppressionStream('org_1', 'live', ' ANN@example.COM')).toBe(
      suppressionStream('org_1', 'live', 'ann@example.com'),
    );
    expect(suppressionStream('org_1', 'test', 'ann@example.com')).not.toBe(
      suppressionStream('org_1', 'live', 'ann@example.com'),
    );
    expect(suppressionStream('org_1', 'live', 'ann@example.com')).not.toContain('ann');
  });
});
