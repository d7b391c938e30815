/** A small stderr spinner for waits on a TTY (consola 3 has no spinner of its own). */

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** `text` is read at every frame, so it may change (a countdown). */
export function spinner(text: string | (() => string), write: (s: string) => void): { stop(): void } {
  let i = 0;
  const draw = () => write(`\r\u001b[2K${FRAMES[i++ % FRAMES.length]} ${typeof text === "string" ? text : text()}`);
  draw();
  const timer = setInterval(draw, 80);
  return {
    stop() {
      clearInterval(timer);
      write("\r\u001b[2K");
    },
  };
}
