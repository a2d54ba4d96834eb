import { sha256Hex } from '../../platform/crypto.ts';
import type { Mode } from '../../platform/eventstore/types.ts';

export type SuppressionReason = 'hard_bounce' | 'complaint' | 'manual';

export type SuppressionEvent =
  | {
      type: 'SuppressionAdded';
      data: {
        suppressionId: string;
        orgId: string;
        mode: Mode;
        /** As first given (trimmed); comparisons use its lower-case form. */
        email: string;
        reason: SuppressionReason;
        sourceEmailId: string | null;
        createdAt: string;
      };
    }
  | { type: 'SuppressionRemoved'; data: { suppressionId: string; removedAt: string } };

export const normaliseAddress = (email: string) => email.trim().toLowerCase();

/**
 * One stream per (organization, mode, address): uniqueness holds across processes because two adds of the same
 * address append to the same stream with an expected revision. Hashed, so no address appears in a stream name.
 */
export const suppressionStream = (orgId: string, mode: Mode, email: string) =>
  `suppression-${orgId}-${mode}-${sha256Hex(normaliseAddress(email))}`;
