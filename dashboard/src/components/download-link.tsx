import { useState } from 'preact/hooks';
import { get } from '../api.ts';
import { ErrorBox, useAction } from '../ui.tsx';
import { ActionButton } from './action-button.tsx';

/**
 * A download asked for when it is wanted: `path` answers a signed, short-lived `download_url` (the API's
 * attachment and raw-message reads), so the link is fetched on a click and then shown.
 */
export function DownloadLink(props: { path: string; ask?: string; download?: string }) {
  const [url, setUrl] = useState<string | null>(null);
  const action = useAction();
  return (
    <>
      {url ? (
        <a href={url} rel="noreferrer">
          {props.download ?? 'Download'}
        </a>
      ) : (
        <ActionButton
          class="small"
          action={action}
          run={async () => setUrl((await get<{ download_url: string }>(props.path)).download_url)}
        >
          {props.ask ?? 'Get download link'}
        </ActionButton>
      )}
      <ErrorBox error={action.error} />
    </>
  );
}
