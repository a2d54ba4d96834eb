import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

const audienceFields = {
  object: z.literal('audience'),
  id: z.string(),
  name: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
};

/** An audience as a list, a creation or a change shows it. */
export const Audience = z.strictObject(audienceFields).meta({ id: 'Audience' });

/** One audience read by its id: with the number of its contacts. */
export const AudienceWithCount = z
  .strictObject({
    ...audienceFields,
    contacts: z.int().min(0).meta({ description: 'Contacts in the audience.' }),
  })
  .meta({ id: 'AudienceWithCount' });

export const AudienceList = listOf(Audience, 'AudienceList');

/** `/segments` is Resend's name for audiences (its SDK's `audiences` calls it): an alias of every audience route, docs/resend.md. */
export const AUDIENCE_PATHS = ['/audiences', '/segments'] as const;
/** The summary of a route under `base`: the alias says what it is. */
export const aliased = (base: string, summary: string) =>
  base === '/segments' ? `${summary} (Resend's path for audiences)` : summary;
