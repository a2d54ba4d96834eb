import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../platform/config.ts';
import { purposeKey } from '../../platform/crypto.ts';
import type { Mode } from '../../platform/eventstore/types.ts';

/**
 * Open and click tracking tokens. A token names the email (and, for a click, the link) and carries an HMAC
 * under a key derived from POSTLINE_SECRET_KEY, so only links Postline itself wrote into an email redirect:
 * the click endpoint is no open redirect.
 */
export interface TrackingClaim {
  emailId: string;
  orgId: string;
  mode: Mode;
  /** The original link, for click tokens. */
  url?: string;
}

export class TrackingTokens {
  readonly #key: KeyObject;
  readonly baseUrl: string;

  constructor(secretKeyBase64: string, baseUrl: string) {
    this.#key = purposeKey(secretKeyBase64, 'postline tracking');
    this.baseUrl = baseUrl.replace(/\/$/, '');
  }

  /** Links on POSTLINE_TRACKING_HOST (else PUBLIC_URL); `secretKeyBase64` is POSTLINE_SECRET_KEY as resolved. */
  static fromConfig(
    config: Pick<Config, 'POSTLINE_TRACKING_HOST' | 'PUBLIC_URL'>,
    secretKeyBase64: string,
  ): TrackingTokens {
    const host = config.POSTLINE_TRACKING_HOST;
    const base = host ? (/^https?:\/\//.test(host) ? host : `https://${host}`) : config.PUBLIC_URL;
    return new TrackingTokens(secretKeyBase64, base);
  }

  #mac(body: string) {
    return createHmac('sha256', this.#key).update(body).digest().subarray(0, 16).toString('base64url');
  }

  sign(claim: TrackingClaim): string {
    const body = Buffer.from(
      JSON.stringify([claim.emailId, claim.orgId, claim.mode, claim.url ?? null]),
    ).toString('base64url');
    return `${body}.${this.#mac(body)}`;
  }

  verify(token: string): TrackingClaim | null {
    const [body, mac] = token.split('.');
    if (!body || !mac) return null;
    const expected = this.#mac(body);
    if (mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), Buffer.from(expected)))
      return null;
    try {
      const [emailId, orgId, mode, url] = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      return { emailId, orgId, mode, ...(url !== null && { url }) };
    } catch {
      return null;
    }
  }

  /** Links on `host` (a sending domain's verified tracking CNAME) keep the configured base's scheme. */
  #base(host?: string) {
    return host ? `${new URL(this.baseUrl).protocol}//${host}` : this.baseUrl;
  }

  openUrl(claim: Omit<TrackingClaim, 'url'>, host?: string) {
    return `${this.#base(host)}/t/o/${this.sign(claim)}.gif`;
  }

  clickUrl(claim: TrackingClaim, host?: string) {
    return `${this.#base(host)}/t/c/${this.sign(claim)}`;
  }
}

/**
 * Rewrites an html body for tracking: http(s) links in `href` attributes go through the click endpoint; a
 * 1x1 pixel before `</body>` (or at the end) reports opens. mailto:, anchors, other schemes and links marked
 * `data-postline-untracked` stay as they are.
 */
export function addTracking(
  html: string,
  tokens: TrackingTokens,
  claim: Omit<TrackingClaim, 'url'>,
  options: { opens: boolean; clicks: boolean; host?: string },
): string {
  let out = html;
  if (options.clicks) {
    out = out.replace(
      // Attributes before href are bounded: unbounded, a body of many unclosed `<a` tags takes quadratic time.
      /(<a\b[^>]{0,1000}?\bhref\s*=\s*)(["'])(https?:\/\/[^"']+)\2/gi,
      (m: string, pre: string, q: string, url: string, at: number, whole: string) => {
        // A link marked `data-postline-untracked` (a broadcast's unsubscribe link) stays as it is.
        const rest = whole.slice(at + m.length, at + m.length + 1000);
        const tag = pre + rest.slice(0, Math.max(0, rest.indexOf('>')));
        if (/\bdata-postline-untracked\b/i.test(tag)) return m;
        const original = url.replace(/&amp;/g, '&');
        return `${pre}${q}${tokens.clickUrl({ ...claim, url: original }, options.host).replace(/&/g, '&amp;')}${q}`;
      },
    );
  }
  if (options.opens) {
    const pixel = `<img src="${tokens.openUrl(claim, options.host)}" width="1" height="1" alt="" style="display:none;border:0" />`;
    out = /<\/body>/i.test(out) ? out.replace(/<\/body>/i, `${pixel}</body>`) : out + pixel;
  }
  return out;
}
