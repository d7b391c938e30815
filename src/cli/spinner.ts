/** A small stderr spinner for waits on a TTY (consola 3 has no spinner of its own). */

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export function spinner(text: string, write: (s: string) => void): { stop(): void } {
  let i = 0;
  const draw = () => write(`\r${FRAMES[i++ % FRAMES.length]} ${text}`);
  draw();
  const timer = setInterval(draw, 80);
  return {
    stop() {
      clearInterval(timer);
      write("\r\u001b[2K");
    },
  };
}
