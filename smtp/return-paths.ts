import { installationBounceDomain } from '../domain/domains/dns-records.ts';
import { domainOf } from '../domain/emails/addresses.ts';
import type { Config } from '../platform/config.ts';

/** The address complaint feedback loops (Microsoft JMRP, Yahoo CFL, …) are registered with. */
export const feedbackAddress = (mxHost: string) => `fbl@${mxHost.toLowerCase()}`;

/**
 * Whether an address is on a return-path domain: a sending domain's custom return path (`bounces.<domain>`) or the
 * installation's bounce domain. Bounces and List-Unsubscribe `mailto:`s arrive only there.
 */
export function onReturnPathDomain(
  config: Pick<Config, 'POSTLINE_RETURN_PATH_SUBDOMAIN' | 'POSTLINE_MX_HOST'>,
): (address: string) => boolean {
  const prefix = `${config.POSTLINE_RETURN_PATH_SUBDOMAIN.toLowerCase()}.`;
  const bounceDomain = installationBounceDomain(config);
  return (address) => {
    const domain = domainOf(address.toLowerCase());
    return domain === bounceDomain || domain.startsWith(prefix);
  };
}
