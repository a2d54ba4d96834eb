import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startPostline } from '../../bin/service.ts';
import { classifyBounce, operatorRulesOf } from '../../domain/emails/bounce-classes.ts';
import { ConfigError, loadConfig } from '../../platform/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'postline-bounce-rules-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('BOUNCE_RULES_FILE', () => {
  it('given a rules file, its rules decide before the defaults', () => {
    // Given
    const path = file('ok.json', JSON.stringify([{ text: 'zuviele Mails', class: 'mailbox_full' }]));
    // When
    const config = loadConfig({ BOUNCE_RULES_FILE: path });
    // Then
    const rules = operatorRulesOf(config);
    expect(classifyBounce('550 Benutzer hat zuviele Mails auf dem Server.', rules)).toBe('mailbox_full');
    expect(classifyBounce('550 5.1.1 user unknown', rules)).toBe('invalid_recipient');
    expect(operatorRulesOf(loadConfig({}))).toEqual([]);
  });

  it('stops start-up on a file that is missing or not JSON', () => {
    expect(() => loadConfig({ BOUNCE_RULES_FILE: join(dir, 'missing.json') })).toThrow(ConfigError);
    expect(() => loadConfig({ BOUNCE_RULES_FILE: file('bad.json', '[{') })).toThrow(/BOUNCE_RULES_FILE/);
  });

  it('stops start-up, naming the rule, on a faulty rule', async () => {
    const config = loadConfig({ BOUNCE_RULES_FILE: file('faulty.json', '[{"text": "x", "class": "nope"}]') });
    await expect(startPostline(config)).rejects.toThrow(ConfigError);
    await expect(startPostline(config)).rejects.toThrow(/BOUNCE_RULES_FILE: rule 1: class must be one of/);
  });
});
