import type { Mode } from '../../platform/eventstore/types.ts';

export type AudienceEvent =
  | {
      type: 'AudienceCreated';
      data: { audienceId: string; orgId: string; mode: Mode; name: string; createdAt: string };
    }
  | { type: 'AudienceRenamed'; data: { audienceId: string; name: string; renamedAt: string } }
  /** Its contacts stay; their memberships go with it (they leave `audience_ids`: the contacts projection). */
  | { type: 'AudienceDeleted'; data: { audienceId: string; deletedAt: string } };

export const audienceStream = (audienceId: string) => `audience-${audienceId}`;
