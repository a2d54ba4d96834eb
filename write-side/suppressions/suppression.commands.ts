import { type SuppressionRecord, suppressionDecider } from '../../domain/suppressions/suppression.decider.ts';
import {
  type SuppressionEvent,
  type SuppressionReason,
  suppressionStream,
} from '../../domain/suppressions/suppression.events.ts';
import { notFound } from '../../platform/errors.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import { type EventMetadata, isOneOf, type Position } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';

type SuppressionAdded = Extract<SuppressionEvent, { type: 'SuppressionAdded' }>;

export interface AddSuppressionResult {
  suppression: SuppressionRecord;
  /** False when the address was already suppressed: the existing record is returned and nothing is appended. */
  created: boolean;
  position?: Position;
}

/**
 * Suppresses an address for the organization and mode in `meta`. Used by the API (`manual`) and by the
 * suppression policy (`hard_bounce`, `complaint`). Idempotent: an address already suppressed, in any letter case,
 * keeps its existing record.
 */
export async function addSuppression(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  input: { email: string; reason: SuppressionReason; sourceEmailId?: string },
): Promise<AddSuppressionResult> {
  const email = input.email.trim();
  const result = await handleCommand(
    services.store,
    suppressionStream(meta.orgId, meta.mode, email),
    suppressionDecider,
    {
      type: 'AddSuppression',
      suppressionId: newId('sup', services.clock.now().getTime()),
      orgId: meta.orgId,
      mode: meta.mode,
      email,
      reason: input.reason,
      sourceEmailId: input.sourceEmailId ?? null,
      at: services.clock.now().toISOString(),
    },
    meta,
  );
  return { suppression: result.state.active!, created: result.events.length > 0, position: result.position };
}

/**
 * The suppression policy's command (processes/suppression-policy/) for a hard bounce or complaint of one email:
 * added once per (email, address), so a replay or a crash between the outcome and this command cannot add it twice,
 * and a suppression the customer lifted is not put back by the same email again.
 */
export async function suppressForEmail(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  input: { email: string; reason: 'hard_bounce' | 'complaint'; sourceEmailId: string },
): Promise<void> {
  const history = await services.store.readStream(
    suppressionStream(meta.orgId, meta.mode, input.email.trim()),
  );
  const added = (e: (typeof history)[number]) => isOneOf<SuppressionAdded>(e, ['SuppressionAdded']);
  if (history.some((e) => added(e) && e.data.sourceEmailId === input.sourceEmailId)) return;
  await addSuppression(services, meta, input);
}

/** Lifts a suppression by id; sends to the address are allowed again. Another organization's or mode's id is not found. */
export async function removeSuppression(
  services: Pick<Services, 'store' | 'clock' | 'db' | 'lookUps'>,
  meta: EventMetadata,
  suppressionId: string,
) {
  // The id leads to the address, and the address to the stream; the stream's state decides.
  const found = await services.lookUps.findSuppression(services.db, meta, suppressionId);
  if (!found) throw notFound('Suppression', suppressionId);
  const result = await handleCommand(
    services.store,
    suppressionStream(meta.orgId, meta.mode, found.email),
    suppressionDecider,
    { type: 'RemoveSuppression', suppressionId, at: services.clock.now().toISOString() },
    meta,
  );
  return { position: result.position };
}
