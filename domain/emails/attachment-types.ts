import { cutText } from '../../platform/unstorable-text.ts';

/**
 * The media type of an attachment given without `content_type`, from its filename's extension (as Resend derives
 * it): an inline image or a PDF sent as `application/octet-stream` is shown by many clients as an unknown file.
 */
const BY_EXTENSION: Record<string, string> = {
  avif: 'image/avif',
  bmp: 'image/bmp',
  gif: 'image/gif',
  heic: 'image/heic',
  ico: 'image/vnd.microsoft.icon',
  jpeg: 'image/jpeg',
  jpg: 'image/jpeg',
  png: 'image/png',
  svg: 'image/svg+xml',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  webp: 'image/webp',
  pdf: 'application/pdf',
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  htm: 'text/html',
  html: 'text/html',
  css: 'text/css',
  ics: 'text/calendar',
  vcf: 'text/vcard',
  xml: 'application/xml',
  json: 'application/json',
  eml: 'message/rfc822',
  zip: 'application/zip',
  gz: 'application/gzip',
  '7z': 'application/x-7z-compressed',
  rtf: 'application/rtf',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odp: 'application/vnd.oasis.opendocument.presentation',
  epub: 'application/epub+zip',
  pkpass: 'application/vnd.apple.pkpass',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
};

/** `content_type` as given, else the filename's extension's type, else `application/octet-stream`. */
export function attachmentContentType(filename: string, given?: string): string {
  if (given !== undefined) return given;
  const dot = filename.lastIndexOf('.');
  const extension = dot < 0 ? '' : filename.slice(dot + 1).toLowerCase();
  return Object.hasOwn(BY_EXTENSION, extension) ? BY_EXTENSION[extension] : 'application/octet-stream';
}

/** What a file name may not hold: a line break, a NUL, a slash (one line, no path). */
export const UNFIT_IN_FILE_NAME = /[\r\n\0/\\]/;

/**
 * A file name made fit to keep for a name the sender did not choose as such (a submitted MIME part's, the last
 * segment of a `path`): one line, no NUL, no slashes (each becomes `_`), at most 255 characters without half a
 * surrogate pair; `attachment` when nothing is left.
 */
export const fitFileName = (name: string) =>
  cutText(name.replace(new RegExp(UNFIT_IN_FILE_NAME, 'g'), '_'), 255) || 'attachment';
