// Placeholder replaced by the KurrentDB adapter.
export const KurrentEventStore: any = {
  connect() {
    throw new Error('KurrentDB adapter not built yet');
  },
};
