// Page setup: the site's theme colour, then the chat panel.
import { initChat } from "./chat.js";

const accent = document.body.dataset.accent;
if (accent && /^#[0-9a-fA-F]{3,6}$/.test(accent)) {
  document.documentElement.style.setProperty("--accent", accent);
}
initChat();
