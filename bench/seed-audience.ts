import type { Services } from '../platform/services.ts';
import { createContact } from '../write-side/contacts/contact.commands.ts';

/**
 * Puts `count` contacts into the audience through the contact command, 200 at a time, and reports how long it took.
 * (Until the CSV import's own measurement replaces it.)
 */
export async function seedAudience(
  services: Services,
  org: { orgId: string },
  audienceId: string,
  count: number,
  results: string[],
) {
  const meta = { orgId: org.orgId, mode: 'test' as const, actor: 'cli' };
  const started = performance.now();
  let last: string | undefined;
  for (let i = 0; i < count; i += 200) {
    const made = await Promise.all(
      Array.from({ length: Math.min(200, count - i) }, (_, j) =>
        createContact(services, meta, {
          email: `reader${i + j}@example.org`,
          firstName: `Reader${i + j}`,
          lastName: null,
          properties: { plan: 'gold' },
          unsubscribed: false,
          consentGivenAt: null,
          audienceIds: [audienceId],
        }),
      ),
    );
    last = made.at(-1)?.position ?? last;
  }
  await services.readYourWrites.waitFor(['contacts'], last);
  const ms = performance.now() - started;
  results.push(`contacts created one command each: ${Math.round((count / ms) * 1000)}/s`);
}
