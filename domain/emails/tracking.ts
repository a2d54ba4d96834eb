import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  type KeyObject,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import { decodeHTMLAttribute } from 'entities';
import type { Config } from '../../platform/config.ts';
import { purposeKey } from '../../platform/crypto.ts';
import type { Mode } from '../../platform/eventstore/types.ts';

/**
 * Open and click tracking tokens. A token is the claim (email, organization, mode and, for a click, the link)
 * encrypted with AES-256-GCM under a key derived from POSTLINE_SECRET_KEY: opaque to the recipient, who learns
 * nothing from it (not even the email id), and only links Postline itself wrote into an email verify, so the
 * click endpoint is no open redirect. Tokens of the earlier format (base64url JSON with an HMAC, which showed
 * the organization id) still verify, so links in mail already sent keep working; none are made any more.
 */
export interface TrackingClaim {
  emailId: string;
  orgId: string;
  mode: Mode;
  /** The original link, for click tokens. */
  url?: string;
}

/** The format's first byte: a later format can tell its tokens from these. */
const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class TrackingTokens {
  readonly #key: KeyObject;
  /** The earlier format's HMAC key, to verify tokens in mail already sent. */
  readonly #legacyKey: KeyObject;
  readonly baseUrl: string;

  constructor(secretKeyBase64: string, baseUrl: string) {
    this.#key = purposeKey(secretKeyBase64, 'postline tracking token');
    this.#legacyKey = purposeKey(secretKeyBase64, 'postline tracking');
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

  sign(claim: TrackingClaim): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const plain = JSON.stringify([claim.emailId, claim.orgId, claim.mode, claim.url ?? null]);
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  verify(token: string): TrackingClaim | null {
    try {
      const plain = token.includes('.') ? this.#openLegacy(token) : this.#open(token);
      if (plain === null) return null;
      const [emailId, orgId, mode, url] = JSON.parse(plain);
      if (typeof emailId !== 'string' || typeof orgId !== 'string') return null;
      return { emailId, orgId, mode, ...(typeof url === 'string' && { url }) };
    } catch {
      return null;
    }
  }

  #open(token: string): string | null {
    const bytes = Buffer.from(token, 'base64url');
    if (bytes.length <= 1 + IV_BYTES + TAG_BYTES || bytes[0] !== VERSION) return null;
    const iv = bytes.subarray(1, 1 + IV_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv);
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    // A token changed anywhere fails its tag: final() throws, and verify answers null.
    return Buffer.concat([
      decipher.update(bytes.subarray(1 + IV_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  }

  /** `<base64url JSON>.<HMAC>`: the earlier format, verified only. */
  #openLegacy(token: string): string | null {
    const [body, mac, ...rest] = token.split('.');
    if (!body || !mac || rest.length > 0) return null;
    const expected = createHmac('sha256', this.#legacyKey)
      .update(body)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    if (mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), Buffer.from(expected)))
      return null;
    return Buffer.from(body, 'base64url').toString('utf8');
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
 * A link as a browser's URL parser reads it (WHATWG URL): tabs and line breaks anywhere in it are no part of it, nor
 * are controls and spaces at its end. Redirected to as written, `…/page ` would reach `…/page%20`.
 */
function asBrowserReads(href: string): string {
  const link = href.replace(/[\t\n\r]/g, '');
  let end = link.length;
  while (end > 0 && link.charCodeAt(end - 1) <= 0x20) end--;
  return link.slice(0, end);
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
        // Signed as the browser reads the href: every character reference decoded (`&amp;`, `&#38;`, `&AMP;`, …).
        const link = asBrowserReads(decodeHTMLAttribute(url));
        return `${pre}${q}${tokens.clickUrl({ ...claim, url: link }, options.host).replace(/&/g, '&amp;')}${q}`;
      },
    );
  }
  if (options.opens) {
    const pixel = `<img src="${tokens.openUrl(claim, options.host)}" width="1" height="1" alt="" style="display:none;border:0" />`;
    out = /<\/body>/i.test(out) ? out.replace(/<\/body>/i, () => `${pixel}</body>`) : out + pixel;
  }
  return out;
}
