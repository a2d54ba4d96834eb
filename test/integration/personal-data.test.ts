import { describe, expect, it } from 'vitest';
import { migrate } from '../../platform/db/migrations.ts';
import {
  forgetPersonalData,
  forgetPersonalDataByPrefix,
  openPersonalData,
  personalDataMigrations,
  sealPersonalData,
} from '../../platform/personal-data.ts';
import { openTestDatabase } from '../support/databases.ts';

describe('personal data sealed per subject', () => {
  it('opens what it sealed until the subject is forgotten; never for another subject', async () => {
    const { db, dispose } = await openTestDatabase();
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
      // By prefix: every subject named so, and no other (`client:org_1:` is not `client:org_12:`).
      const kept = await sealPersonalData(db, 'client:org_12:em_3', value);
      const gone = await sealPersonalData(db, 'client:org_1:em_1', value);
      await sealPersonalData(db, 'client:org_1:em_2', value);
      expect(await forgetPersonalDataByPrefix(db, 'client:org_1:')).toBe(2);
      expect(await openPersonalData(db, 'client:org_1:em_1', gone)).toBeNull();
      expect(await openPersonalData(db, 'client:org_12:em_3', kept)).toEqual(value);
    } finally {
      await dispose();
    }
  });
});
