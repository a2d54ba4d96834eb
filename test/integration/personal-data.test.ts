import { describe, expect, it } from 'vitest';
import { migrate } from '../../platform/db/migrations.ts';
import {
  forgetPersonalData,
  openPersonalData,
  personalDataMigrations,
  sealPersonalData,
} from '../../platform/personal-data.ts';
import { openTestDatabase } from '../support/databases.ts';

describe('personal data sealed per subject', () => {
  it('opens what it sealed until the subject is forgotten; never for another subject', async () => {
    const { db, dispose } = await openTestDatabase('pglite');
    try {
      await migrate(db, personalDataMigrations);
      const value = { email: 'ann@example.org', firstName: 'Ann' };
      const sealed = await sealPersonalData(db, 'con_1', value);
      expect(sealed).not.toContain('ann@');
      expect(await openPersonalData(db, 'con_1', sealed)).toEqual(value);
      // Sealed for con_1: the key of another subject does not open it (the subject is part of what is signed).
      await sealPersonalData(db, 'con_2', {});
      await expect(openPersonalData(db, 'con_2', sealed)).rejects.toThrow();
      await forgetPersonalData(db, 'con_1');
      expect(await openPersonalData(db, 'con_1', sealed)).toBeNull();
    } finally {
      await dispose();
    }
  });
});
