/** Why a recipient's server refused an email, as docs/bounces.md lists them. */
export const BOUNCE_CLASSES = [
  'invalid_recipient',
  'bad_domain',
  'inactive_mailbox',
  'mailbox_full',
  'message_too_large',
  'content_rejected',
  'spam_or_reputation_block',
  'authentication_failure',
  'rate_limited',
  'tls_required',
  'protocol_error',
  'transient',
  'unknown',
] as const;
export type BounceClass = (typeof BOUNCE_CLASSES)[number];

/** The classes that say the address itself is dead: only these (and complaints) suppress it. */
const SUPPRESSING: ReadonlySet<string> = new Set(['invalid_recipient', 'bad_domain', 'inactive_mailbox']);
export const suppresses = (c: BounceClass): boolean => SUPPRESSING.has(c);

/**
 * One rule of the table: an enhanced status code pattern (`5.1.1`, `5.7.*`, `4.*`) and/or a reply-text regular
 * expression (case-insensitive); a rule with both matches only when both do. The first rule that matches decides.
 */
export interface BounceRule {
  status?: string;
  text?: string;
  class: BounceClass;
}

/**
 * The rules Postline ships: the providers' own wording first, then the status codes of RFC 3463. They classify
 * refusals and deferrals alike (a delay carries the class of the reply that deferred it).
 */
export const DEFAULT_BOUNCE_RULES: readonly BounceRule[] = [
  // Postline's own words for what it decided without a server's reply (`local: …`, `local error: …`: no sending
  // domain, no connection free, a message that could not be composed) say nothing a provider's class would.
  { text: '^local( error)?: ', class: 'unknown' },
  { status: '4.7.28', class: 'rate_limited' },
  // Greylisting is the textbook deferral: try again later. Postgrey words it "Recipient address rejected:
  // Greylisted", which says nothing of the address.
  { text: 'gr[ae]y-?list', class: 'transient' },
  { text: 'protocol violation|syntax error|too many recipients', class: 'protocol_error' },
  {
    text: 'rate limit|rate of|receiving mail (too quickly|at a rate)|too many (messages|connections)|throttl|\\[TSS?0\\d\\]|server busy|excessive volume|concurrent connections|per connection',
    class: 'rate_limited',
  },
  {
    text: 'spamhaus|spamcop|barracuda|block ?list|black ?list|banned sending ip|\\bRBL\\b|\\bDNSBL\\b|reputation|blocked using|is listed|listed (on|in|at)|\\((BL|DIAL)\\)',
    class: 'spam_or_reputation_block',
  },
  {
    text: '\\bSPF\\b|\\bDKIM\\b|\\bDMARC\\b|unauthenticated|not authenticated|authentication|spoof',
    class: 'authentication_failure',
  },
  { status: '5.7.26', class: 'authentication_failure' },
  { status: '5.7.23', class: 'authentication_failure' },
  { text: 'STARTTLS|\\bTLS\\b|encryption', class: 'tls_required' },
  { status: '5.7.10', class: 'tls_required' },
  { status: '*.2.2', class: 'mailbox_full' },
  {
    text: 'over (storage )?quota|quota exceeded|mailbox (is )?full|insufficient (system )?storage|storage space',
    class: 'mailbox_full',
  },
  { status: '*.3.4', class: 'message_too_large' },
  { status: '*.2.3', class: 'message_too_large' },
  { text: 'too (large|big)|size limit|exceeds? (the )?(maximum|size)', class: 'message_too_large' },
  // No class that suppresses (SUPPRESSING) may take a refusal that leaves the recipient's address in doubt, so
  // these come before the first rule that does. Postfix words the refusal of any restriction "Sender/Recipient
  // address rejected": under a 5.7.x status (check_recipient_access, check_sender_access) it is a policy, not news
  // of a dead address, whatever address it names.
  { status: '5.7.*', text: '(sender|recipient) address rejected', class: 'spam_or_reputation_block' },
  // A refusal of our own envelope sender (RFC 3463 X.1.7 its syntax, X.1.8 its domain, Postfix's "Sender address
  // rejected"): nothing about the recipient; and a class that does not halve the destination's rates either
  // (shaping-rules.ts SLOWING), since the destination is shared by every sender and one return path is at fault.
  { status: '*.1.7', class: 'protocol_error' },
  { status: '*.1.8', class: 'protocol_error' },
  { text: 'sender address rejected', class: 'protocol_error' },
  { status: '5.2.1', class: 'inactive_mailbox' },
  {
    text: 'disabled|inactive|deactivated|suspended|no longer (active|in use|available)',
    class: 'inactive_mailbox',
  },
  { status: '5.1.2', class: 'bad_domain' },
  { status: '5.4.4', class: 'bad_domain' },
  {
    text: 'domain (not found|does not exist|name not found)|host (or domain )?not found|no mx|unrouteable',
    class: 'bad_domain',
  },
  { status: '5.1.*', class: 'invalid_recipient' },
  { status: '5.4.1', class: 'invalid_recipient' },
  {
    text: "user unknown|unknown user|user is unknown|no such (user|mailbox|recipient)|does not exist|recipient not found|invalid recipient|recipient address rejected|unknown recipient|mailbox unavailable|mailbox not found|doesn't have an? [\\w.-]+ account",
    class: 'invalid_recipient',
  },
  { text: 'spam|unsolicited|junk', class: 'spam_or_reputation_block' },
  { text: 'virus|malware|content|attachment|phish|violates .*policy', class: 'content_rejected' },
  { status: '5.6.*', class: 'content_rejected' },
  { status: '5.7.*', class: 'spam_or_reputation_block' },
  { text: '^5\\d\\d.*\\bblocked\\b', class: 'spam_or_reputation_block' },
  { status: '5.5.*', class: 'protocol_error' },
  { status: '5.3.*', class: 'protocol_error' },
  { status: '4.*', class: 'transient' },
  { text: '^4\\d\\d', class: 'transient' },
];

/** The enhanced status code a reply or DSN carries (`5.1.1`), if any. */
export function enhancedStatusOf(reply: string): string | undefined {
  return /\b([245])\.(\d{1,3})\.(\d{1,3})\b/.exec(reply)?.slice(1, 4).join('.');
}

function statusMatches(pattern: string, status: string | undefined): boolean {
  if (!status) return false;
  const want = pattern.split('.');
  const have = status.split('.');
  return want.every((p, i) => p === '*' || p === have[i]);
}

/** A rule's text compiled once: a delivery classifies every refusal against every rule. */
const compiled = new Map<string, RegExp>();
function textPattern(text: string): RegExp {
  const known = compiled.get(text);
  if (known) return known;
  const pattern = new RegExp(text, 'i');
  compiled.set(text, pattern);
  return pattern;
}

function matches(rule: BounceRule, reply: string, status: string | undefined): boolean {
  if (rule.status !== undefined && !statusMatches(rule.status, status)) return false;
  if (rule.text !== undefined && !textPattern(rule.text).test(reply)) return false;
  return rule.status !== undefined || rule.text !== undefined;
}

/** The operator's rules as the configuration holds them (the rules file's JSON, if any), checked. */
export const operatorRulesOf = (config: { bounceRules?: unknown }): BounceRule[] =>
  config.bounceRules === undefined || config.bounceRules === null ? [] : parseBounceRules(config.bounceRules);

/** The class of a refusal: the first of the operator's rules, then of the defaults, that matches the reply. */
export function classifyBounce(reply: string, operatorRules: readonly BounceRule[] = []): BounceClass {
  const status = enhancedStatusOf(reply);
  for (const rule of [...operatorRules, ...DEFAULT_BOUNCE_RULES])
    if (matches(rule, reply, status)) return rule.class;
  return 'unknown';
}

/**
 * A permanent refusal (5xx, or a DSN with a 5.x.x status) as a bounce: hard when its class says the address is
 * dead, soft (final for the recipient, never suppressed) for any other refusal: a block, a policy, the content.
 */
export function refusalOf(
  reply: string,
  operatorRules: readonly BounceRule[] = [],
): { bounceType: 'hard' | 'soft'; classification: BounceClass } {
  const classification = classifyBounce(reply, operatorRules);
  return { bounceType: suppresses(classification) ? 'hard' : 'soft', classification };
}

/**
 * The class of a recorded bounce: its own, or for one recorded before classes, the class its stored reply gets
 * from the default rules when hard, `unknown` when soft (retries exhausted).
 */
export function classOfBounce(data: {
  bounceType: 'hard' | 'soft';
  classification?: BounceClass;
  smtpResponse: string;
}): BounceClass {
  if (data.classification) return data.classification;
  return data.bounceType === 'hard' ? classifyBounce(data.smtpResponse) : 'unknown';
}

/**
 * The class of a recorded delay (`EmailDeliveryDelayed`, `EmailDelayReported`): its own, or for one recorded
 * without (before delays had classes, and every delay report) the class its stored reply gets from the default
 * rules.
 */
export function classOfDelay(data: { classification?: BounceClass; smtpResponse: string }): BounceClass {
  return data.classification ?? classifyBounce(data.smtpResponse);
}

const STATUS_PATTERN = /^[245*](\.(\d{1,3}|\*)){0,2}$/;

/** The operator's rules file (JSON: an array of rules), checked; throws a message naming the faulty entry. */
export function parseBounceRules(json: unknown): BounceRule[] {
  if (!Array.isArray(json)) throw new Error('the rules file holds a JSON array of rules');
  return json.map((entry, i) => {
    const where = `rule ${i + 1}`;
    if (typeof entry !== 'object' || entry === null) throw new Error(`${where}: not an object`);
    const { status, text, class: c, ...rest } = entry as Record<string, unknown>;
    if (Object.keys(rest).length) throw new Error(`${where}: unknown field ${Object.keys(rest)[0]}`);
    if (!BOUNCE_CLASSES.includes(c as BounceClass))
      throw new Error(`${where}: class must be one of ${BOUNCE_CLASSES.join(', ')}`);
    if (status === undefined && text === undefined) throw new Error(`${where}: needs a status or a text`);
    if (status !== undefined && (typeof status !== 'string' || !STATUS_PATTERN.test(status)))
      throw new Error(`${where}: status is a pattern such as 5.1.1, 5.7.* or 4.*`);
    if (text !== undefined) {
      if (typeof text !== 'string') throw new Error(`${where}: text is a regular expression`);
      try {
        new RegExp(text, 'i');
      } catch {
        throw new Error(`${where}: text is not a valid regular expression`);
      }
    }
    return {
      ...(status !== undefined && { status }),
      ...(text !== undefined && { text }),
      class: c,
    } as BounceRule;
  });
}
