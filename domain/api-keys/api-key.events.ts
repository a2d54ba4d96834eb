import type { Mode } from '../../platform/eventstore/types.ts';
import type { Permission } from '../../platform/tenancy.ts';

export type ApiKeyEvent =
  | {
      type: 'ApiKeyCreated';
      data: {
        keyId: string;
        orgId: string;
        mode: Mode;
        name: string;
        permission: Permission;
        domainId: string | null;
        /** SHA-256 of the key, hex. The key itself is never stored. */
        keyHash: string;
        keyPrefix: string;
        createdAt: string;
      };
    }
  | { type: 'ApiKeyDeleted'; data: { keyId: string; deletedAt: string } };

export const apiKeyStream = (keyId: string) => `apikey-${keyId}`;
