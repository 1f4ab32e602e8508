// How a password file's text becomes the password, shared by the CLI (--password-file and the other file options)
// and the node (--admin-password-file, src/config.ts) so that one file works for both. Any thread; no I/O.

/** The text without the line ends that close it: `\n`, `\r\n`, or a run of them, as editors (Windows ones too) and
 *  `echo` leave them. Anything before them, other lines included, is the password. */
export function passwordOfFileText(text: string): string {
  return text.replace(/[\r\n]+$/, '');
}
