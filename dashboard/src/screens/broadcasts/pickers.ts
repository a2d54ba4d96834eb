import { listAll, type Schema } from '../../api.ts';
import { useLoad } from '../../ui.tsx';

export interface Named {
  id: string;
  name: string;
}
type TemplateSummary = Schema<'Template'>;

/** The audiences, topics and templates a broadcast can name, for the pickers and for showing names. */
export function usePickers() {
  return useLoad(async () => {
    const [audiences, topics, templates] = await Promise.all([
      listAll<Named>('/audiences'),
      listAll<Named>('/topics'),
      listAll<TemplateSummary>('/templates'),
    ]);
    return { audiences: audiences.data, topics: topics.data, templates: templates.data };
  }, []);
}

export const nameOf = (list: Named[] | undefined, id: string | null) =>
  id ? (list?.find((x) => x.id === id)?.name ?? id) : null;
