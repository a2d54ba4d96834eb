import type { Schema } from '../../api.ts';
import { Fact } from '../../components/facts.tsx';
import { Link } from '../../ui.tsx';
import { HtmlPreview } from '../email.tsx';

type BroadcastJson = Schema<'Broadcast'>;
type TemplateSummary = Schema<'Template'>;

/** What a broadcast that left draft sends: sender, subject, template or its own HTML and text. */
export function BroadcastContent({
  b,
  template,
}: {
  b: BroadcastJson;
  template: TemplateSummary | undefined;
}) {
  return (
    <>
      <h2>Content</h2>
      <dl class="facts">
        <Fact label="From">{b.from}</Fact>
        <Fact label="Reply-to">{b.reply_to.length > 0 && b.reply_to.join(', ')}</Fact>
        <Fact label="Subject">{b.subject ?? <span class="muted">the template's</span>}</Fact>
        <Fact label="Template">
          {b.template_id && (
            <Link href={`/templates/${b.template_id}`}>{template?.name ?? b.template_id}</Link>
          )}
        </Fact>
      </dl>
      {b.html && <HtmlPreview html={b.html} title={`HTML source of ${b.name} (variables not filled in)`} />}
      {b.text && <pre class="text-part">{b.text}</pre>}
    </>
  );
}
