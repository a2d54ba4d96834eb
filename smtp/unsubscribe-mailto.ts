import type { Services } from '../platform/services.ts';
import {
  unsubscribeFrom,
  unsubscribeTarget,
  unsubscribeTokenOf,
} from '../write-side/broadcasts/unsubscribe.commands.ts';
import type { ReplyName } from './replies.ts';

/**
 * The List-Unsubscribe `mailto:` of broadcast emails and of sends about a topic (unsubscribe+<token>@<return
 * path's domain>, docs/broadcasts.md): mail to it unsubscribes whom the email was for. What the message says does
 * not matter: that it was sent to the address is the request.
 */
export function unsubscribeMailto(services: Services, onReturnPathDomain: (address: string) => boolean) {
  /** Only on a return-path domain: `unsubscribe+…@` a customer's inbound domain is that customer's mail. */
  const takes = (address: string) => unsubscribeTokenOf(address) !== null && onReturnPathDomain(address);

  /** The address's target, or null when it names none. */
  async function targetOf(address: string) {
    const token = unsubscribeTokenOf(address);
    if (!token || !onReturnPathDomain(address)) return null;
    return unsubscribeTarget(services, token);
  }

  return {
    takes,

    async refusal(address: string): Promise<ReplyName | null> {
      return (await targetOf(address)) ? null : 'unknownReturnPath';
    },

    /** Unsubscribes whom each address's email was for; the message itself is not kept. */
    async deliver(_message: unknown, addresses: string[]): Promise<boolean> {
      for (const address of addresses) {
        const target = await targetOf(address);
        if (target) await unsubscribeFrom(services, target);
      }
      return false;
    },
  };
}
