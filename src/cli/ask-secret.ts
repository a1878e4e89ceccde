/**
 * Asks for a secret on the terminal without echo, the prompt on stderr (Backspace edits, Ctrl-C or Ctrl-D on an empty
 * line gives up); undefined when stdin is not a terminal, so nothing is read from a pipe by surprise.
 */
export function askSecret(question: string): Promise<string | undefined> {
  const input = process.stdin;
  const output = process.stderr;
  if (!input.isTTY) return Promise.resolve(undefined);
  // Echo off before the question shows: nothing typed after it reaches the screen.
  input.setRawMode(true);
  output.write(question);
  return new Promise((resolve) => {
    let text = '';
    const done = (value: string | undefined) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      output.write('\n');
      resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') {
          done(text);
          return;
        }
        if (ch === '\u0003' || (ch === '\u0004' && text === '')) {
          done(undefined);
          return;
        }
        text = ch === '\u007f' || ch === '\b' ? text.slice(0, -1) : text + ch;
      }
    };
    input.setEncoding('utf8');
    input.on('data', onData);
    input.resume();
  });
}
