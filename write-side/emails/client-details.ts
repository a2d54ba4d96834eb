import { type ClientDetails, clientDetailsSubject } from '../../domain/emails/email.events.ts';
import { PersonalDataForgottenError, sealPersonalData } from '../../platform/personal-data.ts';
import type { Services } from '../../platform/services.ts';

/**
 * An opener's or clicker's IP address and user agent are personal data: recorded only when the organization
 * turned `track_client_details` on, and then sealed with a key of the email's own (crypto-shredding, as contact
 * data), so deleting that key erases them from the append-only log. Undefined: nothing is recorded.
 */
export async function sealClientDetails(
  services: Pick<Services, 'db' | 'lookUps'>,
  email: { orgId: string; emailId: string },
  details: ClientDetails,
): Promise<string | undefined> {
  if (!(await services.lookUps.tracksClientDetails(services.db, email.orgId))) return undefined;
  // An email whose details were forgotten (`--forget`) records none again: the event goes in without them.
  return sealPersonalData(services.db, clientDetailsSubject(email.orgId, email.emailId), details).catch(
    (error) => {
      if (error instanceof PersonalDataForgottenError) return undefined;
      throw error;
    },
  );
}
